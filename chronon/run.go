package chronon

import "fmt"

// step runs one cycle: every unit, in plan order, at the same local cycle.
func (s *Simulation) step() {
	c := s.cycle
	for _, u := range s.order {
		u.cycle = c
		s.cur = u
		u.unit.Tick()
	}
	s.cur = nil
	s.cycle = c + 1
	if s.cycle == s.obs.next {
		s.obs.dump(s)
	}
}

func (s *Simulation) runnable() error {
	if !s.built {
		return ErrNotBuilt
	}
	return s.fault
}

// Run runs n more cycles, or fewer if a unit requests termination (see
// Termination). It returns the run's failure: a panic in a unit
// (*UnitError) or a lane overflow (*OverflowError).
func (s *Simulation) Run(n uint64) (err error) {
	if err := s.runnable(); err != nil {
		return err
	}
	defer s.recoverUnit(&err)
	for end := s.cycle + n; s.cycle < end && !s.halt; {
		s.step()
	}
	return s.fault
}

// RunUntilDone runs until every unit implementing Doner reports done
// (checked before each cycle), for at most max more cycles. It returns
// ErrCycleLimit if the limit passes first.
func (s *Simulation) RunUntilDone(max uint64) (err error) {
	if err := s.runnable(); err != nil {
		return err
	}
	var doners []Doner
	for _, u := range s.units {
		if d, ok := u.unit.(Doner); ok {
			doners = append(doners, d)
		}
	}
	defer s.recoverUnit(&err)
	for end := s.cycle + max; !s.halt; {
		if allDone(doners) {
			return nil
		}
		if s.cycle == end {
			return fmt.Errorf("%w: %d cycles without every unit done", ErrCycleLimit, max)
		}
		s.step()
	}
	return s.fault
}

func allDone(ds []Doner) bool {
	for _, d := range ds {
		if !d.Done() {
			return false
		}
	}
	return true
}

// RunUntilTermination runs until a unit requests termination, for at most
// max more cycles, and returns the request. It returns ErrCycleLimit if the
// limit passes first.
func (s *Simulation) RunUntilTermination(max uint64) (t Termination, err error) {
	if err := s.Run(max); err != nil {
		return Termination{}, err
	}
	if s.term == nil {
		return Termination{}, fmt.Errorf("%w: no termination request in %d cycles", ErrCycleLimit, max)
	}
	return *s.term, nil
}
