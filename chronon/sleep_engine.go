package chronon

import (
	"cmp"
	"slices"
	"sync/atomic"
)

// The parallel engine with sleeping units. The scheduling contract is the
// engine's (engine.go): every cluster has finished cycle c-1 before any
// runs c. Only the clusters with a unit due in c are claimed in c, so a
// cycle costs what its awake units cost.
//
// Between cycles, on one goroutine while no cluster runs (the goroutine
// that finished the cycle, as in engine.open), openSleepy settles the units
// that ticked (sleepSched.settle: their ports now hold every message pushed
// in the cycle), applies the arrivals the clusters recorded, pops the units
// due in the next cycle from the scheduler's heap, groups them by cluster
// and hands each worker list the clusters it has to run, jumping over
// cycles in which none is due. During a cycle a cluster writes only its own
// sleepCluster: a push on an armed connection in sender cycle c is an
// arrival in a later cycle (recorded in the sender's cluster, applied
// between cycles) or, on a zero-delay connection, in c itself: then the
// receiver is in the sender's cluster, later in plan order, and the cluster
// ticks it in c (its late heap). Units start and stop waiting, connections
// are armed, and next cycles change only between cycles, apart from that
// zero-delay case on the cluster's own goroutine; a sender disarms its own
// connection (conn.arrival).
//
// A sleeping unit does not hold up its successors: a cluster with no unit
// due in c is simply not part of c, which counts as done without it; its
// units' local cycles stay at their last tick, which no port compares with
// the sender's cycle (admission reads the receiver's pops, which a sleeping
// unit does not make).

// sleepCluster is a cluster's part of one cycle.
type sleepCluster struct {
	units  []*unitState // due in the cycle, in plan order
	late   []int        // plan positions woken in the cycle by a zero-delay arrival: a min-heap
	ticked []*unitState // ticked in the cycle, to settle
	notes  []arrival    // arrivals in later cycles at waiting units
}

type arrival struct {
	to *unitState
	at uint64
}

// sleepList is one worker list's clusters due in the open cycle, and its
// claim counter (see claimChunk). n is (cycle+1)<<idxBits | len(run),
// stored by the opener after run: a claimer that loads it with its cycle's
// tag has its cycle's count, and the claim word (which only grows) refuses
// a stale claim.
type sleepList struct {
	claim atomic.Uint64
	_     [cacheLine - 8]byte
	n     atomic.Uint64
	_     [cacheLine - 8]byte
	run   []int // cluster indexes
}

// sleepRun is the engine's sleeping state for one partition.
type sleepRun struct {
	lists  []*sleepList
	listOf []int  // each cluster's list
	target uint64 // clusters to finish, counted from the run's start, through the open cycle
	keep   []int  // clusters whose units ticked and stay awake, between cycles
	mixed  []int  // clusters whose due units need sorting, between cycles
}

// unkeep returns the kept units to the heap when the run stops before
// the cycle they are due in.
func (r *sleepRun) unkeep(q *sleepSched) {
	for _, ci := range r.keep {
		cl := &q.clusters[ci]
		for _, u := range cl.units {
			q.push(wake{u.next, u.pos})
		}
		clear(cl.units)
		cl.units = cl.units[:0]
	}
	r.keep = r.keep[:0]
}

func (e *engine) sleepStart() {
	s := e.sim
	if e.sl == nil {
		r := &sleepRun{listOf: make([]int, len(s.plan.clusters))}
		for li, l := range e.lists {
			for _, units := range l.clusters {
				r.listOf[s.plan.cluster[units[0].index]] = li
			}
			r.lists = append(r.lists, &sleepList{})
		}
		e.sl = r
	}
	e.sl.target = 0
	s.sleep.flushCur()
	for _, l := range e.sl.lists {
		l.claim.Store(0)
		l.n.Store(0)
	}
}

// noteArrival records an arrival in cycle a at the waiting unit to, pushed in
// sender cycle c by from's cluster, on that cluster's goroutine.
func (e *engine) noteArrival(from, to *unitState, c, a uint64) {
	q := e.sim.sleep
	cl := &q.clusters[e.sim.plan.cluster[from.index]]
	if to.edge(a) == c { // zero delay: to is in from's cluster, after it in plan order
		if c < to.next {
			to.next = c
			cl.pushLate(to.pos)
		}
		return
	}
	cl.notes = append(cl.notes, arrival{to, a})
}

// openSleepy is engine.open with sleeping units: it settles the cycle that
// ended and opens the next cycle, from c on, in which a unit is due, or the
// stop.
func (e *engine) openSleepy(c uint64) {
	s, q, r := e.sim, e.sim.sleep, e.sl
	// A unit that stays awake stays in its cluster's units, which keep
	// plan order (the cluster ticked them in it); the others go to the
	// heap.
	r.keep, r.mixed = r.keep[:0], r.mixed[:0]
	for li, l := range r.lists {
		for _, ci := range l.run {
			cl := &q.clusters[ci]
			clear(cl.units)
			cl.units = cl.units[:0]
			for _, u := range cl.ticked {
				switch u.next = q.settle(u, u.cycle); {
				case u.next == c:
					cl.units = append(cl.units, u)
				case u.next != none:
					q.push(wake{u.next, u.pos})
				}
			}
			if len(cl.units) > 0 {
				r.keep = append(r.keep, ci)
			}
			for _, a := range cl.notes {
				if q.wakeAt(a.to, a.at) && r.listOf[s.plan.cluster[a.to.index]] != li {
					q.crossed++
				}
			}
			clear(cl.ticked)
			clear(cl.notes)
			cl.ticked, cl.notes, cl.late = cl.ticked[:0], cl.notes[:0], cl.late[:0]
		}
		l.run = l.run[:0]
	}
	for {
		if o := &s.obs; c == o.next && !e.hasPanic(c) {
			o.observe(s, c)
		}
		if e.untilDone && allDone(e.doners) {
			e.allDone = true
			e.gate.Store(c<<1 | 1)
			e.m.Wake()
			return
		}
		if c == e.end || e.stopAt.Load() <= c {
			r.unkeep(q)
			e.gate.Store(c<<1 | 1)
			e.m.Wake()
			return
		}
		n := 0
		for _, ci := range r.keep {
			for _, u := range q.clusters[ci].units {
				u.ran = c + 1
			}
			l := r.lists[r.listOf[ci]]
			l.run = append(l.run, ci)
			n++
		}
		for len(q.h) > 0 && q.h[0].cycle == c {
			w := q.h[0]
			q.pop()
			u := s.order[w.pos]
			if u.next != c || u.ran == c+1 {
				continue // superseded, or a duplicate
			}
			u.ran = c + 1
			ci := s.plan.cluster[u.index]
			cl := &q.clusters[ci]
			switch {
			case len(cl.units) == 0:
				l := r.lists[r.listOf[ci]]
				l.run = append(l.run, ci)
				n++
			case cl.units[len(cl.units)-1].pos > u.pos:
				r.mixed = append(r.mixed, ci) // after kept units: sort below
			}
			cl.units = append(cl.units, u)
		}
		for _, ci := range r.mixed {
			slices.SortFunc(q.clusters[ci].units, func(a, b *unitState) int { return cmp.Compare(a.pos, b.pos) })
		}
		if n == 0 {
			next := none
			if len(q.h) > 0 {
				next = q.h[0].cycle
			}
			c = min(next, e.end, s.obs.next)
			continue
		}
		for _, l := range r.lists {
			l.n.Store((c+1)<<idxBits | uint64(len(l.run)))
		}
		r.target += uint64(n)
		e.gate.Store(c << 1)
		e.m.Wake() // after the store: the Dekker handshake of package pressure
		return
	}
}

// loopSleepy is worker.loop over the clusters due in each open cycle.
func (w *worker) loopSleepy() {
	e := w.e
	r := e.sl
	for c := e.start; ; {
		g := w.awaitGate(c)
		if g&1 == 1 {
			return
		}
		c = g >> 1
		ran := uint64(0)
		for i := range r.lists {
			l := r.lists[(w.id+i)%len(r.lists)]
			nw := l.n.Load()
			if nw>>idxBits != c+1 {
				continue // c is over
			}
			n := nw & (1<<idxBits - 1)
			for {
				lo, hi, ok := claimChunk(&l.claim, c, n, n, false)
				if !ok {
					break
				}
				for _, ci := range l.run[lo:hi] {
					w.runSleepy(c, &e.sim.sleep.clusters[ci])
				}
				ran += hi - lo
			}
		}
		if ran > 0 {
			// The cycle cannot end before this worker's add, so the
			// opener of c+1 is not writing target yet.
			if t := r.target; e.done.Add(ran) == t {
				e.openSleepy(c + 1)
			}
		}
		c++
	}
}

// runSleepy ticks the cluster's units due in c, and those a zero-delay
// arrival wakes meanwhile, in plan order (see worker.runCluster for a
// panic).
func (w *worker) runSleepy(c uint64, cl *sleepCluster) {
	var u *unitState
	defer func() {
		if r := recover(); r != nil {
			w.e.panicked(stopKey{c, u.pos}, &UnitError{Unit: u.name, Cycle: c, Value: r})
		}
	}()
	order := w.e.sim.order
	for i := 0; ; {
		switch {
		case len(cl.late) > 0 && (i == len(cl.units) || cl.late[0] < cl.units[i].pos):
			u = order[cl.popLate()]
		case i < len(cl.units):
			u = cl.units[i]
			i++
		default:
			return
		}
		u.cycle = c
		cl.ticked = append(cl.ticked, u)
		u.unit.Tick()
	}
}

func (cl *sleepCluster) pushLate(pos int) {
	h := append(cl.late, pos)
	i := len(h) - 1
	for i > 0 && h[(i-1)/2] > pos {
		h[i] = h[(i-1)/2]
		i = (i - 1) / 2
	}
	h[i] = pos
	cl.late = h
}

func (cl *sleepCluster) popLate() int {
	h := cl.late
	top := h[0]
	n := len(h) - 1
	x := h[n]
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		if l+1 < n && h[l+1] < h[l] {
			l++
		}
		if h[l] >= x {
			break
		}
		h[i] = h[l]
		i = l
	}
	if n > 0 {
		h[i] = x
	}
	cl.late = h
	return top
}
