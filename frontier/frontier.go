package frontier

import "math/bits"

// This file is the frontier proper: finding the smallest lane head and
// taking it. Both modes return the head in place; take removes it.

// head returns the front message of the lane of rank s, or nil if the lane
// is empty. The pointer is valid until take(s).
func (m *Merger[T]) head(s int) *item[T] {
	src := &m.srcs[s]
	if src.spill.n > 0 {
		return src.spill.front()
	}
	return src.ring.Peek()
}

// min returns the rank of the lane with the smallest head key and that
// head's arrive cycle, or s < 0 if every lane is empty. head(s) is the
// message itself.
func (m *Merger[T]) min() (s int, arrive uint64) {
	if m.heapMode {
		m.refresh()
		if len(m.heap.e) == 0 {
			return -1, 0
		}
		// The entry holds the head's arrive (take and refresh keep it so):
		// no need to read the head.
		return int(m.heap.e[0].src), m.heap.e[0].arrive
	}
	if m.spills > 0 {
		return m.scanSpilled()
	}
	s, arrive, _, _ = m.scan(0, false)
	return s, arrive
}

// scanSpilled is scan while some lane has a spill: it reads every head
// through head, without the cache.
func (m *Merger[T]) scanSpilled() (int, uint64) {
	best, bp := -1, (*item[T])(nil)
	for s := range m.srcs {
		if p := m.head(s); p != nil && (bp == nil || p.arrive < bp.arrive) {
			best, bp = s, p
		}
	}
	if bp == nil {
		return -1, 0
	}
	return best, bp.arrive
}

// take removes and returns the head of lane s, which min just returned, and
// in heap mode puts the lane's next head, if any, in its place. It copies
// the message out with the ring's TryPop, which clears the slot with a plain
// store; Peek and Advance would clear it with a call.
func (m *Merger[T]) take(s int) item[T] {
	if m.heapMode {
		return m.heapPop(s)
	}
	src := &m.srcs[s]
	m.known &^= 1 << (s & (heapThreshold - 1))
	if src.spill.n == 0 {
		it, _ := src.ring.TryPop()
		m.hd[s&(heapThreshold-1)]++
		return it
	}
	it := *src.spill.front()
	src.spill.pop()
	if src.spill.n == 0 {
		m.spills--
	}
	return it
}

// heapPop is take in heap mode: the lane of rank s is the heap's top, with
// a head ready to pop. It makes no call, so that it runs without a frame:
// the heap's sift-down is here, its only use (as a method it was past the
// inliner's budget), and a heap of one or two entries, a sparse merge's
// usual case, needs no sift.
func (m *Merger[T]) heapPop(s int) item[T] {
	hl := &m.hot[s]
	var it item[T]
	var p *item[T] // the lane's next head
	if m.spills > 0 && m.srcs[s].spill.n > 0 {
		// The spill precedes the ring.
		src := &m.srcs[s]
		it = *src.spill.front()
		src.spill.pop()
		if src.spill.n == 0 {
			m.spills--
			p = hl.ring.Peek()
		} else {
			p = src.spill.front()
		}
	} else {
		it, _ = hl.ring.TryPop() // non-empty: the heap holds its head
		// Fact 3 of refresh: read the lane again after every pop.
		p = hl.ring.Peek()
	}
	h := &m.heap
	var x hentry // the entry to sift down from the top
	if p != nil {
		if len(h.e) == 1 {
			h.e[0].arrive = p.arrive
			return it
		}
		x = hentry{arrive: p.arrive, src: int32(s)}
	} else {
		hl.inHeap = false
		n := len(h.e) - 1
		switch n {
		case 0:
			h.e = h.e[:0]
			return it
		case 1: // the other entry is the whole heap
			h.e[0] = h.e[1]
			h.e = h.e[:1]
			return it
		}
		x = h.e[n]
		h.e = h.e[:n]
	}
	e := h.e
	n := uint(len(e))
	i := uint(0)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && e[r].less(e[c]) {
			c = r
		}
		if !e[c].less(x) {
			break
		}
		e[i] = e[c]
		i = c
	}
	e[i] = x
	return it
}

// refresh moves newly notified lanes into the heap.
//
// No wakeup is lost. The argument uses the Go memory model's rules for
// sync/atomic: all atomic operations on a word happen in one total order,
// and an atomic operation B that observes the effect of an atomic operation
// A is synchronized after A, so everything sequenced before A happens
// before everything sequenced after B. Three facts carry it.
//
//  1. Only the consumer clears bits, and only by Swap, a read-modify-write
//     that returns what it cleared: the Or of a push is either observed by
//     exactly one Swap or still set, waiting for the next refresh. (A Load
//     that reads zero clears nothing; an Or it misses is seen by a later
//     Load.)
//  2. A push stores the ring's tail and then does its Or, in program order.
//     A Swap that observes the Or is synchronized after it, so the slot
//     write and the tail store happen before every ring read the consumer
//     makes after that Swap: such a read sees the message (or later ones).
//     The tail store is ringbuf's release store: an atomic Store under the
//     race detector, a plain MOV on amd64, whose TSO order gives it the
//     same effect here; the argument needs nothing of it beyond program
//     order before the Or.
//  3. A lane outside the heap whose bit is observed is read at once (below);
//     a lane in the heap is read again after every pop of its head
//     (heapPop, through which every heap-mode pop goes), and leaves the
//     heap only when such a read finds it empty.
//
// So a pushed message is delivered: by 1, some Swap observes its Or; if the
// lane is then outside the heap, the read that follows sees the message (2);
// if it is inside, every later read of the lane sees the message until it
// is popped, so the lane cannot leave the heap before that. Repeated pushes
// may coalesce into one bit, and a bit for a lane already in the heap is
// dropped: both are covered by 3. A push that races a pop's empty read is
// either seen by that read or sets its bit after the read; if after, the
// lane is out of the heap when a later Swap observes the bit (1), and is
// read again (3). The argument needs no store-load fence after the tail
// store: the Or, a locked instruction on amd64, orders it.
// TestHandshakeNoLostWakeup and TestConcurrentFreeRun exercise these races.
func (m *Merger[T]) refresh() {
	words := m.notify.words
	for i := 0; i < len(words); i += shardStride {
		word := &words[i]
		if word.Load() == 0 { // a load only shares the line; Swap would take it exclusively
			continue
		}
		for b := word.Swap(0); b != 0; b &= b - 1 {
			// Fact 3: a notified lane outside the heap is read at once.
			s := i/shardStride*64 + bits.TrailingZeros64(b)
			hl := &m.hot[s]
			if hl.inHeap {
				continue
			}
			p := hl.ring.Peek() // the lane's head, unless it has a spill
			if m.spills > 0 && m.srcs[s].spill.n > 0 {
				p = m.srcs[s].spill.front()
			}
			if p == nil {
				continue
			}
			hl.inHeap = true
			m.heap.push(hentry{arrive: p.arrive, src: int32(s)})
		}
	}
}

// rebuild forgets cached lane heads and recomputes the heap from every lane
// after a flush changed lane heads behind their back. Bits left set are harmless: refresh drops them.
func (m *Merger[T]) rebuild() {
	m.known = 0
	if !m.heapMode {
		m.syncHeads()
		return
	}
	m.heap.e = m.heap.e[:0]
	for s := range m.srcs {
		m.hot[s].inHeap = false
		if p := m.head(s); p != nil {
			m.hot[s].inHeap = true
			m.heap.push(hentry{arrive: p.arrive, src: int32(s)})
		}
	}
}
