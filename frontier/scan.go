package frontier

import "math/bits"

// This file is the scan mode's selection (fewer than heapThreshold lanes):
// one tail load per lane, no notification.

// scan is min for fewer than heapThreshold lanes and no spill; with take it
// is also TryPop's whole scan-mode path, so that a pop costs one call. A
// first pass collects the non-empty lanes at the cost of one load each, the
// producer's tail, compared with the mirrored head; a second compares their
// heads, cached in heads when the consumer has seen them already (only it
// can change a head). Ranks are in (connID, laneID) order, so the
// lowest-ranked lane with the smallest arrive wins ties.
//
// It returns the winner's rank s (below 0 if every lane is empty) and its
// head's arrive cycle a. With take, if a <= cycle it also removes that head
// and returns it in it, and ok is true.
func (m *Merger[T]) scan(cycle uint64, take bool) (s int, a uint64, it item[T], ok bool) {
	rings, hd := &m.rings, &m.hd
	// Unrolled: one case per group of four lanes, the highest first, falling
	// through to the lower ones, so that every ring, mirror and bit is a
	// constant and nothing is spent on a loop.
	var busy uint32
	switch m.nscan {
	case 32:
		if rings[28].Tail() != hd[28] {
			busy |= 1 << 28
		}
		if rings[29].Tail() != hd[29] {
			busy |= 1 << 29
		}
		if rings[30].Tail() != hd[30] {
			busy |= 1 << 30
		}
		if rings[31].Tail() != hd[31] {
			busy |= 1 << 31
		}
		fallthrough
	case 28:
		if rings[24].Tail() != hd[24] {
			busy |= 1 << 24
		}
		if rings[25].Tail() != hd[25] {
			busy |= 1 << 25
		}
		if rings[26].Tail() != hd[26] {
			busy |= 1 << 26
		}
		if rings[27].Tail() != hd[27] {
			busy |= 1 << 27
		}
		fallthrough
	case 24:
		if rings[20].Tail() != hd[20] {
			busy |= 1 << 20
		}
		if rings[21].Tail() != hd[21] {
			busy |= 1 << 21
		}
		if rings[22].Tail() != hd[22] {
			busy |= 1 << 22
		}
		if rings[23].Tail() != hd[23] {
			busy |= 1 << 23
		}
		fallthrough
	case 20:
		if rings[16].Tail() != hd[16] {
			busy |= 1 << 16
		}
		if rings[17].Tail() != hd[17] {
			busy |= 1 << 17
		}
		if rings[18].Tail() != hd[18] {
			busy |= 1 << 18
		}
		if rings[19].Tail() != hd[19] {
			busy |= 1 << 19
		}
		fallthrough
	case 16:
		if rings[12].Tail() != hd[12] {
			busy |= 1 << 12
		}
		if rings[13].Tail() != hd[13] {
			busy |= 1 << 13
		}
		if rings[14].Tail() != hd[14] {
			busy |= 1 << 14
		}
		if rings[15].Tail() != hd[15] {
			busy |= 1 << 15
		}
		fallthrough
	case 12:
		if rings[8].Tail() != hd[8] {
			busy |= 1 << 8
		}
		if rings[9].Tail() != hd[9] {
			busy |= 1 << 9
		}
		if rings[10].Tail() != hd[10] {
			busy |= 1 << 10
		}
		if rings[11].Tail() != hd[11] {
			busy |= 1 << 11
		}
		fallthrough
	case 8:
		if rings[4].Tail() != hd[4] {
			busy |= 1 << 4
		}
		if rings[5].Tail() != hd[5] {
			busy |= 1 << 5
		}
		if rings[6].Tail() != hd[6] {
			busy |= 1 << 6
		}
		if rings[7].Tail() != hd[7] {
			busy |= 1 << 7
		}
		fallthrough
	case 4:
		if rings[0].Tail() != hd[0] {
			busy |= 1 << 0
		}
		if rings[1].Tail() != hd[1] {
			busy |= 1 << 1
		}
		if rings[2].Tail() != hd[2] {
			busy |= 1 << 2
		}
		if rings[3].Tail() != hd[3] {
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
		p := rings[s].Peek() // non-nil: the tail moved, only we take messages
		a = p.arrive
		if !take || a > cycle {
			return s, a, it, false
		}
		it = *p
		rings[s].Drop()
		hd[s]++
		return s, a, it, true
	}
	for b := busy &^ known; b != 0; b &= b - 1 {
		u := bits.TrailingZeros32(b) & (heapThreshold - 1)
		m.heads[u] = rings[u].Peek().arrive
	}
	known |= busy
	// s is the lowest-ranked busy lane; a later one wins only with a
	// strictly smaller arrive.
	a = m.heads[s]
	for b := busy & (busy - 1); b != 0; b &= b - 1 {
		u := bits.TrailingZeros32(b) & (heapThreshold - 1)
		if x := m.heads[u]; x < a {
			s, a = u, x
		}
	}
	if !take || a > cycle {
		m.known = known
		return s, a, it, false
	}
	it, _ = rings[s].TryPop() // non-empty: the scan saw its tail move
	hd[s]++
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
		m.hd[s] = m.srcs[s].ring.Head()
	}
}
