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
