package chronon

// SetSegmentCycles sets the adaptive segment length, so that tests can
// make a short run switch engines many times.
func SetSegmentCycles(s *Simulation, n uint64) { s.segCycles = n }

// SequentialSegments returns how many adaptive segments ran sequentially.
func SequentialSegments(s *Simulation) int { return s.seqSegments }
