package chronon

// SetSegmentCycles sets the adaptive segment length, so that tests can
// make a short run switch engines many times.
func SetSegmentCycles(s *Simulation, n uint64) { s.segCycles = n }

// SequentialSegments returns how many adaptive segments ran sequentially.
func SequentialSegments(s *Simulation) int { return s.seqSegments }

// PayloadBytes returns the payload storage of every connection's lane or
// ring, each shared broadcast ring counted once.
func PayloadBytes(s *Simulation) int {
	n := 0
	for _, u := range s.units {
		for _, o := range u.outs {
			n += o.payloadBytes()
		}
	}
	return n
}

// BroadcastPorts returns the names of the OutPorts using a shared
// broadcast ring.
func BroadcastPorts(s *Simulation) []string {
	var names []string
	for _, u := range s.units {
		for _, o := range u.outs {
			if o.broadcasting() {
				names = append(names, o.fullName())
			}
		}
	}
	return names
}

// ForgetIdle resets every InPort's idle cycle, so that the next receive
// attempts look at the lanes: tests show that idle changes no result.
func ForgetIdle(s *Simulation) {
	for _, in := range s.ins {
		in.forgetIdle()
	}
}

// SleepWakes returns how many sleeping units an arrival woke, and how many
// of those in the parallel engine by a sender on another worker's list.
func SleepWakes(s *Simulation) (all, crossed uint64) { return s.sleepWakes() }

// LookaheadStats returns, summed over the lookahead engine's workers, the
// cycles they ran, their synchronizations between cycles (loads of another
// worker's progress that the cached one could not spare) and their waits
// inside a Tick; ok is false without a lookahead engine.
func LookaheadStats(s *Simulation) (cycles, syncs, tickWaits uint64, ok bool) {
	e, ok := s.eng.(*laEngine)
	if !ok {
		return 0, 0, 0, false
	}
	for _, w := range e.workers {
		cycles += w.cycles
		syncs += w.syncs
		tickWaits += w.tickWaits
	}
	return cycles, syncs, tickWaits, true
}

// LookaheadLags returns, per worker of the lookahead engine, the fewest
// cycles it may run ahead of another worker plus one: the smallest lag of
// its dependencies.
func LookaheadLags(s *Simulation) []uint64 {
	e, ok := s.eng.(*laEngine)
	if !ok {
		return nil
	}
	var lags []uint64
	for _, w := range e.workers {
		l := s.lookahead
		for _, d := range w.deps {
			l = min(l, d.lag)
		}
		lags = append(lags, l)
	}
	return lags
}

// BarrierStats returns, summed over the barrier engine's workers, the
// clusters they ran and, of those, the clusters taken from another
// worker's list; ok is false without a barrier engine.
func BarrierStats(s *Simulation) (ran, stolen uint64, ok bool) {
	e, ok := s.eng.(*engine)
	if !ok {
		return 0, 0, false
	}
	for _, w := range e.workers {
		ran += w.ran
		stolen += w.stolen
	}
	return ran, stolen, true
}

// CalibrationCycles returns how many cycles the first parallel Run ran
// sequentially to calibrate (0 before it has).
func CalibrationCycles(s *Simulation) uint64 { return s.calCycles }
