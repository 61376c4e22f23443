package frontier

// Flush drops every message in the merger, in its FIFO and in every lane,
// and returns how many it dropped. A message whose push races with Flush
// may survive it. In bounded mode Flush does not reset the cycle's budget.
func (m *Merger[T]) Flush() int {
	n := m.fifo.reset()
	for s := range m.srcs {
		src := &m.srcs[s]
		if src.spill.n > 0 {
			n += src.spill.reset()
			m.spills--
		}
		// Drain what is published now; a producer still running cannot
		// keep Flush looping.
		for left := src.ring.Len(); left > 0; {
			k := len(src.ring.PeekN(left))
			src.ring.Advance(k)
			left -= k
			n += k
		}
	}
	m.rebuild()
	return n
}

// FlushIf drops every message, in the FIFO and in every lane, for which drop
// returns true, keeps the others in order, and returns how many it dropped.
// drop is called once per message, in queue order within the FIFO and within
// each lane; it sees the message in place, must not retain the pointer and
// must not call methods of the merger. A message whose push races with
// FlushIf may be missed. In bounded mode FlushIf does not reset the cycle's
// budget.
//
// FlushIf does not allocate unless a lane's messages wrap around the end of
// its ring (see flushLane).
func (m *Merger[T]) FlushIf(drop func(arrive uint64, v *T) bool) int {
	n := m.fifo.filter(drop)
	for s := range m.srcs {
		n += m.flushLane(s, drop)
	}
	m.rebuild()
	return n
}

// flushLane applies drop to the lane of rank s.
//
// The ring's published messages belong to the consumer until it advances
// past them, so it may rewrite them in place: kept messages are moved toward
// the tail and the dropped count is advanced away at the head. The ring lets
// the consumer see only one contiguous run from the head, though. When the
// published messages wrap around the end of the ring, the first run is
// filtered into the lane's spill, a consumer-private queue that precedes the
// ring, and the ring is advanced past it, which exposes the rest.
func (m *Merger[T]) flushLane(s int, drop func(arrive uint64, v *T) bool) int {
	src := &m.srcs[s]
	n := 0
	if src.spill.n > 0 {
		n += src.spill.filter(drop)
		if src.spill.n == 0 {
			m.spills--
		}
	}
	left := src.ring.Len()
	if left == 0 {
		return n
	}
	if run := src.ring.PeekN(left); len(run) < left {
		had := src.spill.n > 0
		for i := range run {
			if p := &run[i]; !drop(p.arrive, &p.v) {
				src.spill.push(*p)
			} else {
				n++
			}
		}
		src.ring.Advance(len(run))
		left -= len(run)
		if !had && src.spill.n > 0 {
			m.spills++
		}
	}
	return n + m.compact(src, left, drop)
}

// compact filters the first k published messages of src's ring, which must
// form one contiguous run, in place.
func (m *Merger[T]) compact(src *source[T], k int, drop func(arrive uint64, v *T) bool) int {
	run := src.ring.PeekN(k)
	marks := m.scratch[:(len(run)+63)/64]
	clear(marks)
	dropped := 0
	for i := range run {
		if p := &run[i]; drop(p.arrive, &p.v) {
			marks[i/64] |= 1 << (i % 64)
			dropped++
		}
	}
	if dropped == 0 {
		src.ring.Advance(0)
		return 0
	}
	// Move kept messages toward the tail, last first, then release the
	// vacated slots at the head (Advance clears them).
	w := len(run)
	for i := len(run) - 1; i >= 0; i-- {
		if marks[i/64]&(1<<(i%64)) != 0 {
			continue
		}
		w--
		if w != i {
			run[w] = run[i]
		}
	}
	src.ring.Advance(dropped)
	return dropped
}
