package chronon

import (
	"fmt"
	"time"
)

// step runs one cycle: every unit, in plan order, at the same local cycle.
func (s *Simulation) step() {
	c := s.cycle
	pf := s.pf
	for i, u := range s.order {
		if i < len(pf) { // the next unit's lines (see planPrefetch)
			prefetchLines(pf[i])
		}
		u.cycle = c
		s.cur = i + 1
		u.unit.Tick()
	}
	s.cur = 0
	s.cycle = c + 1
	if s.cycle == s.obs.next {
		s.obs.observe(s, s.cycle)
	}
}

func (s *Simulation) runnable() error {
	if !s.built {
		return ErrNotBuilt
	}
	return s.failure()
}

// failure returns the run's failure once it has stopped: an overflow in
// cycle c is reported by the Run that reaches the end of c+L-1 (see
// stopKey), so that how a run is split into Run calls changes nothing.
func (s *Simulation) failure() error {
	if s.halted() {
		return s.fault
	}
	return nil
}

// Run runs n more cycles, or fewer if a unit requests termination (see
// Termination). It returns the run's failure: a panic in a unit
// (*UnitError) or a lane overflow (*OverflowError).
func (s *Simulation) Run(n uint64) (err error) {
	if err := s.runnable(); err != nil {
		return err
	}
	if s.eng != nil {
		if n = s.calibrate(n); s.eng != nil { // calibrate may repartition or drop the engine
			s.runAdaptive(n)
			return s.failure()
		}
	}
	return s.runSeq(n)
}

// runAdaptive runs n cycles in segments of about segmentTime, each with the
// parallel engine or, while the parallel engine has lately been slower than
// the sequential one (a host that gives the process less than a core per
// worker makes the per-cycle handshake wait for descheduled workers), with
// the sequential engine, probing the parallel one again after 1, 2, 4, ...
// up to maxBackoff sequential segments. Results do not depend on which
// engine runs which cycles: the ports' cross-goroutine publications stay on
// and are consistent on one goroutine too. Without a calibration (a short
// first Run, or threshold zero) every segment is parallel.
func (s *Simulation) runAdaptive(n uint64) {
	e := s.eng
	seg := uint64(1<<63 - 1)
	if s.seqPer > 0 {
		seg = uint64(min(max(segmentTime/s.seqPer, 256), 1<<20))
	}
	if s.segCycles != 0 {
		seg = s.segCycles
	}
	for n > 0 && !s.halted() {
		k := min(n, seg)
		c0, t0 := s.cycle, time.Now()
		if s.seqLeft > 0 {
			_ = s.runSeq(k)
			s.seqLeft--
			s.seqSegments++
			if ran := s.cycle - c0; ran == k {
				s.seqPer = time.Since(t0) / time.Duration(ran)
			}
		} else {
			e.run(s.cycle+k, false)
			if ran := s.cycle - c0; ran == k && s.seqPer > 0 {
				if time.Since(t0)/time.Duration(ran) > s.seqPer {
					s.backoff = min(max(2*s.backoff, 1), maxBackoff)
					s.seqLeft = s.backoff
				} else {
					s.backoff = 0
				}
			}
		}
		n -= s.cycle - c0
	}
}

// segmentTime is the target length of an adaptive segment: long enough
// that starting the workers (microseconds) is noise, short enough to react
// to the host's load. maxBackoff bounds the sequential segments between two
// parallel probes.
const (
	segmentTime = 20 * time.Millisecond
	maxBackoff  = 32
)

// runSeq runs up to n cycles with the sequential engine.
func (s *Simulation) runSeq(n uint64) (err error) {
	defer s.recoverUnit(&err)
	if s.sleep != nil {
		return s.runSleepy(n)
	}
	for end := s.cycle + n; s.cycle < min(end, s.stopAt); {
		s.step()
	}
	return s.failure()
}

// calibrationCycles is the most cycles the first parallel Run runs
// sequentially, in calibrationSlices slices, to measure the cost of a
// cycle; profileCycles the most it then runs timing every unit, to
// partition by measured cost. Both phases also stop at a time budget
// (calibrationSliceTime per slice, checked after every cycle, and
// profileTime, after at least profileMinCycles), so that an expensive
// model spends a few milliseconds, not a thousand sequential cycles,
// before it runs in parallel: a 100 us cycle measures over 8 slices of one
// cycle and profiles over about 20. Those cycles run on one core; the
// budgets were 0.5 ms per slice, checked every 8 cycles, and 10 ms, which
// cost the 2-worker run of two 32-unit partitions (107 us a cycle) about
// 160 sequential cycles, 9% of a 3,000-cycle run's time.
const (
	calibrationCycles    = 1024
	calibrationSlices    = 8
	calibrationSliceTime = 100 * time.Microsecond
	profileCycles        = 256
	profileMinCycles     = 16
	profileTime          = 2 * time.Millisecond
)

// calibrate runs the first cycles of a parallel configuration sequentially.
// If a cycle costs less than the threshold, the workers' per-cycle handshake
// would cost more than it saves, and the sequential engine is kept. The
// cost is that of the fastest slice, so that the host descheduling the
// goroutine during a slice does not count. Otherwise it times each unit's
// Tick over up to profileCycles more cycles and repartitions the clusters by
// those costs. Results depend on neither the engine nor the partition, so
// neither do these choices. It returns how many of the n cycles remain.
func (s *Simulation) calibrate(n uint64) uint64 {
	if s.calibrated || s.threshold == 0 {
		return n
	}
	if n < calibrationCycles {
		return n // too few cycles to judge: judge on a later run
	}
	const slice = calibrationCycles / calibrationSlices
	c0 := s.cycle
	per := time.Duration(1<<63 - 1)
	for range calibrationSlices {
		c1, t0 := s.cycle, time.Now()
		var el time.Duration
		for ran := uint64(0); ran < slice && el < calibrationSliceTime; ran++ {
			_ = s.runSeq(1) // a failure halts the simulation; Run returns s.fault
			if s.halted() {
				return n - (s.cycle - c0)
			}
			el = time.Since(t0)
		}
		per = min(per, el/time.Duration(s.cycle-c1))
	}
	ran := s.cycle - c0
	s.calibrated = true
	defer func() { s.calCycles = s.cycle - c0 }()
	s.seqPer = per
	if per < s.threshold {
		s.eng, s.seqReason = nil, fmt.Sprintf("a cycle takes %v sequentially, under the %v parallel threshold", per, s.threshold)
		s.setParallel(nil, nil)
		s.info("chronon: running sequentially", "workers", s.workers, "reason", s.seqReason)
		return n - ran
	}
	if s.sleep != nil {
		return n - ran // timing every Tick would tick sleeping units: keep the static partition
	}
	cost := make([]time.Duration, len(s.units))
	c1 := s.cycle
	_ = s.runProfiled(min(n-ran, profileCycles), cost)
	ran += s.cycle - c1
	s.eng = s.newParallel(s.workers, func(cl int) int64 {
		var d time.Duration
		for _, ui := range s.plan.clusters[cl] {
			d += cost[ui]
		}
		return int64(d)
	})
	return n - ran
}

// runProfiled is runSeq adding each unit's Tick time to cost. It stops
// early, after at least profileMinCycles, once profileTime has passed.
func (s *Simulation) runProfiled(n uint64, cost []time.Duration) (err error) {
	defer s.recoverUnit(&err)
	t0 := time.Now()
	for c0, end := s.cycle, s.cycle+n; s.cycle < end && s.cycle < s.stopAt; {
		c := s.cycle
		if c-c0 >= profileMinCycles && time.Since(t0) >= profileTime {
			break
		}
		for i, u := range s.order {
			u.cycle = c
			s.cur = i + 1
			t0 := time.Now()
			u.unit.Tick()
			cost[u.index] += time.Since(t0)
		}
		s.cur = 0
		s.cycle = c + 1
		if s.cycle == s.obs.next {
			s.obs.observe(s, s.cycle)
		}
	}
	return s.failure()
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
	if e := s.eng; e != nil && s.lookahead == 1 {
		if s.halted() {
			return s.failure()
		}
		if e.run(s.cycle+max, true) {
			return nil
		}
		if s.halted() {
			return s.failure()
		}
		return fmt.Errorf("%w: %d cycles without every unit done", ErrCycleLimit, max)
	}
	defer s.recoverUnit(&err)
	for end := s.cycle + max; !s.halted(); {
		if allDone(doners) {
			return nil
		}
		if s.cycle == end {
			return fmt.Errorf("%w: %d cycles without every unit done", ErrCycleLimit, max)
		}
		if s.sleep != nil {
			s.stepSleepy(end)
			continue
		}
		s.step()
	}
	return s.failure()
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
