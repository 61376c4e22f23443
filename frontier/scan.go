package frontier

import "math/bits"

// This file is the scan mode's selection (fewer than heapThreshold lanes):
// one tail load per lane, no notification.

// scan is min for fewer than heapThreshold lanes and no spill; with take it
// is also TryPop's whole scan-mode path, so that a pop costs one call. A
// first pass collects the non-empty lanes at the cost of one load each, the
// producer's tail, compared with the mirrored head; a second compares their
// heads, cached in ranks when the consumer has seen them already (only it
// can change a head). Ranks are in (connID, laneID) order, so the
// lowest-ranked lane with the smallest arrive wins ties.
//
// It returns the winner's rank s (below 0 if every lane is empty) and its
// head's arrive cycle a. With take, if a <= cycle it also removes that head
// and returns it in it, and ok is true.
func (m *Merger[T]) scan(cycle uint64, take bool) (s int, a uint64, it item[T], ok bool) {
	ranks := &m.ranks
	// Unrolled: one case per group of four lanes, the highest first, falling
	// through to the lower ones, so that every ring, mirror and bit is a
	// constant and nothing is spent on a loop.
	var busy uint32
	switch m.nscan {
	case 32:
		if ranks[28].ring.Tail() != ranks[28].hd {
			busy |= 1 << 28
		}
		if ranks[29].ring.Tail() != ranks[29].hd {
			busy |= 1 << 29
		}
		if ranks[30].ring.Tail() != ranks[30].hd {
			busy |= 1 << 30
		}
		if ranks[31].ring.Tail() != ranks[31].hd {
			busy |= 1 << 31
		}
		fallthrough
	case 28:
		if ranks[24].ring.Tail() != ranks[24].hd {
			busy |= 1 << 24
		}
		if ranks[25].ring.Tail() != ranks[25].hd {
			busy |= 1 << 25
		}
		if ranks[26].ring.Tail() != ranks[26].hd {
			busy |= 1 << 26
		}
		if ranks[27].ring.Tail() != ranks[27].hd {
			busy |= 1 << 27
		}
		fallthrough
	case 24:
		if ranks[20].ring.Tail() != ranks[20].hd {
			busy |= 1 << 20
		}
		if ranks[21].ring.Tail() != ranks[21].hd {
			busy |= 1 << 21
		}
		if ranks[22].ring.Tail() != ranks[22].hd {
			busy |= 1 << 22
		}
		if ranks[23].ring.Tail() != ranks[23].hd {
			busy |= 1 << 23
		}
		fallthrough
	case 20:
		if ranks[16].ring.Tail() != ranks[16].hd {
			busy |= 1 << 16
		}
		if ranks[17].ring.Tail() != ranks[17].hd {
			busy |= 1 << 17
		}
		if ranks[18].ring.Tail() != ranks[18].hd {
			busy |= 1 << 18
		}
		if ranks[19].ring.Tail() != ranks[19].hd {
			busy |= 1 << 19
		}
		fallthrough
	case 16:
		if ranks[12].ring.Tail() != ranks[12].hd {
			busy |= 1 << 12
		}
		if ranks[13].ring.Tail() != ranks[13].hd {
			busy |= 1 << 13
		}
		if ranks[14].ring.Tail() != ranks[14].hd {
			busy |= 1 << 14
		}
		if ranks[15].ring.Tail() != ranks[15].hd {
			busy |= 1 << 15
		}
		fallthrough
	case 12:
		if ranks[8].ring.Tail() != ranks[8].hd {
			busy |= 1 << 8
		}
		if ranks[9].ring.Tail() != ranks[9].hd {
			busy |= 1 << 9
		}
		if ranks[10].ring.Tail() != ranks[10].hd {
			busy |= 1 << 10
		}
		if ranks[11].ring.Tail() != ranks[11].hd {
			busy |= 1 << 11
		}
		fallthrough
	case 8:
		if ranks[4].ring.Tail() != ranks[4].hd {
			busy |= 1 << 4
		}
		if ranks[5].ring.Tail() != ranks[5].hd {
			busy |= 1 << 5
		}
		if ranks[6].ring.Tail() != ranks[6].hd {
			busy |= 1 << 6
		}
		if ranks[7].ring.Tail() != ranks[7].hd {
			busy |= 1 << 7
		}
		fallthrough
	case 4:
		if ranks[0].ring.Tail() != ranks[0].hd {
			busy |= 1 << 0
		}
		if ranks[1].ring.Tail() != ranks[1].hd {
			busy |= 1 << 1
		}
		if ranks[2].ring.Tail() != ranks[2].hd {
			busy |= 1 << 2
		}
		if ranks[3].ring.Tail() != ranks[3].hd {
			busy |= 1 << 3
		}
	}
	if busy == 0 {
		return -1, 0, it, false
	}
	known := m.known
	s = bits.TrailingZeros32(busy) & (heapThreshold - 1)
	if busy&(busy-1) == 0 && known&busy == 0 {
		// One non-empty lane not seen yet (a sparse merge's usual case)
		// is the minimum; caching its head would only be undone by the
		// pop that usually follows, which reads it in place and drops it
		// (a copy and a ticket store, where TryPop would index the slot
		// again). known is unchanged: bit s was clear and stays so.
		p := ranks[s].ring.Peek() // non-nil: the tail moved, only we take messages
		a = p.arrive
		if !take || a > cycle {
			return s, a, it, false
		}
		it = *p
		ranks[s].ring.Drop()
		ranks[s].hd++
		return s, a, it, true
	}
	for b := busy &^ known; b != 0; b &= b - 1 {
		u := bits.TrailingZeros32(b) & (heapThreshold - 1)
		ranks[u].arrive = ranks[u].ring.Peek().arrive
	}
	known |= busy
	// s is the lowest-ranked busy lane; a later one wins only with a
	// strictly smaller arrive.
	a = ranks[s].arrive
	for b := busy & (busy - 1); b != 0; b &= b - 1 {
		u := bits.TrailingZeros32(b) & (heapThreshold - 1)
		if x := ranks[u].arrive; x < a {
			s, a = u, x
		}
	}
	if !take || a > cycle {
		m.known = known
		return s, a, it, false
	}
	it, _ = ranks[s].ring.TryPop() // non-empty: the scan saw its tail move
	ranks[s].hd++
	m.known = known &^ (1 << s)
	return s, a, it, true
}

// syncHeads reloads the scan's mirror of every ring's head, after
// registration or after a flush moved heads without take.
func (m *Merger[T]) syncHeads() {
	if m.heapMode {
		return
	}
	for s := range m.srcs {
		m.ranks[s].hd = m.srcs[s].ring.Head()
	}
}
