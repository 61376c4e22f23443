package frontier

import (
	"cmp"
	"slices"
)

// refModel is the reference for the merger: plain slices, heads-only merge,
// and the bounded mode's FIFO and budget, all spelled out directly.
type refModel struct {
	conn  []uint64
	depth []int
	lanes [][]popped

	bounded  bool
	capacity int
	budget   int
	cycle    uint64
	fifo     []popped

	// relaxed marks lanes whose physical room may exceed depth-len: a
	// FlushIf may have moved their messages into the consumer's spill.
	relaxed []bool
}

func newRefModel(capacity int) *refModel {
	return &refModel{bounded: capacity > 0, capacity: capacity}
}

func (r *refModel) addLane(conn uint64, depth int) {
	c := 1
	for c < depth {
		c <<= 1
	}
	r.conn = append(r.conn, conn)
	r.depth = append(r.depth, c)
	r.lanes = append(r.lanes, nil)
	r.relaxed = append(r.relaxed, false)
}

// mustFit reports whether a push to lane l has to succeed; mayFit whether it
// may.
func (r *refModel) mustFit(l int) bool { return len(r.lanes[l]) < r.depth[l] }
func (r *refModel) mayFit(l int) bool  { return r.mustFit(l) || r.relaxed[l] }

func (r *refModel) push(l int, arrive uint64, v int) {
	r.lanes[l] = append(r.lanes[l], popped{arrive, v})
}

// minLane returns the lane with the smallest head key, or -1.
func (r *refModel) minLane() int {
	best := -1
	for l, q := range r.lanes {
		if len(q) == 0 {
			continue
		}
		if best < 0 {
			best = l
			continue
		}
		b := r.lanes[best][0]
		if c := cmp.Or(cmp.Compare(q[0].arrive, b.arrive), cmp.Compare(r.conn[l], r.conn[best]), cmp.Compare(l, best)); c < 0 {
			best = l
		}
	}
	return best
}

func (r *refModel) take(l int) popped {
	p := r.lanes[l][0]
	r.lanes[l] = r.lanes[l][1:]
	return p
}

func (r *refModel) prepare(cycle uint64) {
	if !r.bounded {
		return
	}
	r.cycle, r.budget = cycle, r.capacity
	r.admit()
}

func (r *refModel) admit() {
	for r.budget > 0 && len(r.fifo) < r.capacity {
		l := r.minLane()
		if l < 0 || r.lanes[l][0].arrive > r.cycle {
			return
		}
		r.fifo = append(r.fifo, r.take(l))
		r.budget--
	}
}

// next returns where the next message ready at cycle is, without taking it.
func (r *refModel) next(cycle uint64) (fifo bool, lane int, ok bool) {
	if r.bounded {
		r.admit()
		return true, 0, len(r.fifo) > 0 && r.fifo[0].arrive <= cycle
	}
	l := r.minLane()
	return false, l, l >= 0 && r.lanes[l][0].arrive <= cycle
}

func (r *refModel) pop(cycle uint64) (popped, bool) {
	fifo, l, ok := r.next(cycle)
	switch {
	case !ok:
		return popped{}, false
	case fifo:
		p := r.fifo[0]
		r.fifo = r.fifo[1:]
		return p, true
	default:
		return r.take(l), true
	}
}

func (r *refModel) popFiltered(cycle uint64, keep func(uint64, *int) bool) (popped, bool) {
	for {
		p, ok := r.pop(cycle)
		if !ok || keep(p.arrive, &p.v) {
			return p, ok
		}
	}
}

func (r *refModel) hasReady(cycle uint64) bool {
	_, _, ok := r.next(cycle)
	return ok
}

func (r *refModel) minArrival() (uint64, bool) {
	if r.bounded && len(r.fifo) > 0 {
		return r.fifo[0].arrive, true
	}
	if l := r.minLane(); l >= 0 {
		return r.lanes[l][0].arrive, true
	}
	return ^uint64(0), false
}

func (r *refModel) empty() bool {
	_, ok := r.minArrival()
	return !ok
}

func (r *refModel) flushIf(drop func(uint64, *int) bool) int {
	n := 0
	filter := func(q []popped) []popped {
		out := q[:0:0]
		for _, p := range q {
			if drop(p.arrive, &p.v) {
				n++
			} else {
				out = append(out, p)
			}
		}
		return out
	}
	r.fifo = filter(r.fifo)
	for l := range r.lanes {
		r.lanes[l] = filter(r.lanes[l])
		r.relaxed[l] = true
	}
	return n
}

func (r *refModel) flush() int {
	n := len(r.fifo)
	r.fifo = nil
	for l := range r.lanes {
		n += len(r.lanes[l])
		r.lanes[l] = nil
	}
	return n
}

// keyed is a message with its full merge key, for the sorted reference.
type keyed struct {
	arrive, conn uint64
	lane, v      int
}

// sortedRef returns msgs, given in push order, stably sorted by merge key.
func sortedRef(msgs []keyed) []popped {
	s := slices.Clone(msgs)
	slices.SortStableFunc(s, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.arrive, b.arrive), cmp.Compare(a.conn, b.conn), cmp.Compare(a.lane, b.lane))
	})
	out := make([]popped, len(s))
	for i, k := range s {
		out[i] = popped{k.arrive, k.v}
	}
	return out
}
