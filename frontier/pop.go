package frontier

import "math"

// TryPop removes and returns the next message ready at cycle, with its arrive
// cycle. Unbounded, that is the smallest lane head by (arrive, connID,
// laneID) among the heads with arrive <= cycle; bounded, it is the front of
// the FIFO if it arrives by cycle. ok is false if no message is ready.
func (m *Merger[T]) TryPop(cycle uint64) (v T, arrive uint64, ok bool) {
	if m.bounded {
		m.admit()
		p := m.fifo.front()
		if p == nil || p.arrive > cycle {
			return v, 0, false
		}
		v, arrive = p.v, p.arrive
		m.fifo.pop()
		return v, arrive, true
	}
	if m.heapMode {
		// The heap entry holds the head's arrive: no need to read the head.
		m.refresh()
		if len(m.heap.e) == 0 || m.heap.e[0].arrive > cycle {
			return v, 0, false
		}
		it := m.heapPop(int(m.heap.e[0].src))
		return it.v, it.arrive, true
	}
	if m.spills == 0 {
		// The scan's usual case, without take's spill and heap branches.
		_, arrive, it, ok := m.scan(cycle, true)
		return it.v, arrive, ok
	}
	s, a := m.scanSpilled()
	if s < 0 || a > cycle {
		return v, 0, false
	}
	it := m.take(s)
	return it.v, it.arrive, true
}

// PopFiltered is TryPop with a receiver-owned filter: it takes ready
// messages in TryPop's order and returns the first one that keep accepts.
// Ready messages that keep rejects are consumed for good. keep sees each
// message in place; it must not retain the pointer, and it must not call
// methods of the merger.
func (m *Merger[T]) PopFiltered(cycle uint64, keep func(arrive uint64, v *T) bool) (v T, arrive uint64, ok bool) {
	if m.bounded {
		for {
			m.admit()
			p := m.fifo.front()
			if p == nil || p.arrive > cycle {
				return v, 0, false
			}
			if keep(p.arrive, &p.v) {
				v, arrive = p.v, p.arrive
				m.fifo.pop()
				return v, arrive, true
			}
			m.fifo.pop()
		}
	}
	for {
		s, a := m.min()
		if s < 0 || a > cycle {
			return v, 0, false
		}
		if p := m.head(s); keep(p.arrive, &p.v) {
			it := m.take(s)
			return it.v, it.arrive, true
		}
		m.take(s)
	}
}

// HasReady reports whether TryPop(cycle) would return a message.
func (m *Merger[T]) HasReady(cycle uint64) bool {
	if m.bounded {
		m.admit()
		p := m.fifo.front()
		return p != nil && p.arrive <= cycle
	}
	s, a := m.min()
	return s >= 0 && a <= cycle
}

// MinArrivalCycle returns the arrive cycle of the message TryPop would
// return next once it is ready: unbounded, the smallest lane head; bounded,
// the FIFO's front, or the smallest lane head while the FIFO is empty (that
// message may then wait for the next cycle's admission budget). ok is false
// if the merger holds no message.
func (m *Merger[T]) MinArrivalCycle() (cycle uint64, ok bool) {
	if m.bounded {
		if p := m.fifo.front(); p != nil {
			return p.arrive, true
		}
	}
	if s, a := m.min(); s >= 0 {
		return a, true
	}
	return math.MaxUint64, false
}

// Empty reports whether the merger holds no message, in its FIFO or in any
// lane. Messages whose push has completed before the call, in the sense of
// the Go memory model, are always seen.
func (m *Merger[T]) Empty() bool {
	if m.bounded && m.fifo.n > 0 {
		return false
	}
	s, _ := m.min()
	return s < 0
}
