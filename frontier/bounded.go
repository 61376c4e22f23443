package frontier

// PrepareCycle starts receiver cycle cycle of a bounded merger: it sets the
// cycle's admission budget to the capacity and moves ready lane heads
// (arrive <= cycle) into the FIFO in merge order until the FIFO is full or
// the budget is spent. Later calls in the same cycle (TryPop, PopFiltered,
// HasReady) admit more while both the FIFO has room and the budget lasts, so
// a pop frees room but adds no budget, and a flush lowers occupancy but does
// not reset the budget. A bounded merger admits nothing until the first
// PrepareCycle.
//
// PrepareCycle does nothing on a merger made by New.
func (m *Merger[T]) PrepareCycle(cycle uint64) {
	if !m.bounded {
		return
	}
	m.cycle = cycle
	m.budget = m.capacity
	m.admit()
}

// admit moves ready lane heads into the FIFO while it has room and the
// cycle's budget lasts. The move copies each payload once, out of the lane
// slot into the FIFO slot.
func (m *Merger[T]) admit() {
	for m.budget > 0 && m.fifo.n < m.capacity {
		s, a := m.min()
		if s < 0 || a > m.cycle {
			return
		}
		m.fifo.push(m.take(s))
		m.budget--
	}
}
