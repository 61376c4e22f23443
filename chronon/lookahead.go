package chronon

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lanework/lanework/pressure"
	"github.com/lanework/lanework/ringbuf"
)

// MaxLookahead bounds WithMaxLookahead: a cancel log holds delay+L+1
// entries, a credit log L+2.
const MaxLookahead = 1 << 10

// WithMaxLookahead sets the simulation's lookahead L (YAML
// simulation.max_lookahead); 0 and 1 mean 1, the default. Build rejects L
// outside 0 to MaxLookahead.
//
// With L > 1 a termination or an overflow requested in cycle c ends the run
// at the end of cycle c+L-1 instead of c: every unit ticks L-1 more cycles
// (a panic still ends the run at once). That is part of the model, the same
// in every engine, so results stay bit-identical to the sequential
// engine's. In exchange the parallel engine may let a worker run up to L-1
// cycles ahead of another, and up to d-1 ahead of the producers on its
// delay-d incoming edges (see lookahead.go): long-delay topologies then
// synchronize once per several cycles. RunUntilDone, which asks every Doner
// between cycles, runs the sequential engine when L > 1.
func WithMaxLookahead(l int) SimOption { return func(c *simConfig) { c.lookahead = l } }

// setLookahead validates and applies the configured lookahead (Build).
func (s *Simulation) setLookahead() error {
	l := s.cfg.lookahead
	if l < 0 || l > MaxLookahead {
		return fmt.Errorf("chronon: max lookahead must be 0 to %d, not %d", MaxLookahead, l)
	}
	s.lookahead = uint64(max(l, 1))
	return nil
}

// laEngine is the parallel engine for a lookahead L > 1. Each worker owns a
// fixed set of clusters (the partition) and runs all of its units in plan
// order, cycle after cycle, publishing its progress (the next cycle it will
// run) after each. There is no global barrier: a worker runs cycle c once
// every other worker v has progress >= c+1-lag(v), where lag(v) is the
// smaller of L and the minimum delay of the edges from v's clusters to its
// own (L when there are none). Every rule that needs more is enforced where
// it is needed, by waiting for one worker's progress:
//
//   - messages: a message read in c on a delay-d edge was sent in c-d or
//     earlier, and lag <= d;
//   - the global window (lag <= L): a termination or overflow in cycle c
//     stops the run at the end of c+L-1, and when a worker starts c' every
//     worker has finished c'-L, so any request of a cycle before c'-L+1 is
//     visible in stopAt before c' runs, and no worker ever runs a cycle the
//     sequential engine does not;
//   - pop credits for producer cycle c are the receiver's pops before c: the
//     producer waits for the receiver's progress >= c, but only when its
//     cached credit bound cannot decide (conn.admits, conn.full); a
//     receiver ahead of the producer is handled by the credit log;
//   - a flush in c covers everything sent before c: Flush waits for the
//     producers' progress >= c (InPort.flush);
//   - cancels: the receiver in c needs the sender's epoch as of c-d, final
//     once the sender finished c-d; the log holds d+L+1 entries (cancel.go);
//   - observation intervals and the run's end are segment boundaries: all
//     workers reach them, then the coordinator observes, as the sequential
//     engine does between cycles.
//
// Every wait is of a worker in cycle c for another to finish a cycle before
// c, so no set of workers can wait for each other in a circle.
//
// Memory ordering: a worker's effects in cycle c (ring pushes, published
// counts and logs, stop requests) precede, in its program order, its
// progress store; any worker that loads that progress value, or a later
// one, sees them. That is message passing, which needs a release store and
// an acquire load only: the store is ringbuf.StoreRelease (a plain MOV on
// amd64 outside race builds, ordered by x86-TSO; a sync/atomic store under
// the race detector, which checks the scheme under the Go memory model),
// the loads sync/atomic. A sequentially consistent store (XCHG) waited
// for the line to come back from the worker polling it: about 100 ns a
// cycle on the CPU pipeline. Where a store must precede a load (the
// wakeup handshake), Wake's fence orders it.
type laEngine struct {
	sim     *Simulation
	workers []*laWorker
	end     uint64
	m       *pressure.Manager

	stops
}

// laWorker is one goroutine of the lookahead engine. Its progress has a
// cache line of its own, padded on both sides: another worker loads it,
// and the owner's counters below are written every cycle (sharing a line
// with the next worker's progress cost the CPU pipeline about 50 ns a
// cycle, 2026-12-03).
type laWorker struct {
	_        [cacheLine]byte
	progress atomic.Uint64 // the next cycle the worker runs; none outside a parallel segment
	_        [cacheLine - 8]byte

	e     *laEngine
	units []*unitState // the worker's units, in plan order
	deps  []laDep
	st    *pressure.Stage

	// Counters of the worker's own goroutine, read between runs: cycles
	// run, and synchronizations: loads of another worker's progress
	// between cycles (made only when the cached value does not suffice) and
	// waits inside a Tick (credits, flush).
	cycles, syncs, tickWaits uint64
	waited                   bool // since the last OnWork (see loop)
	_                        [cacheLine]byte
}

// depPad is how many unused laDeps pad each side of a worker's deps: the
// worker writes its seen values, which another worker's allocation must
// not share a cache line with.
const depPad = (cacheLine + 23) / 24

// laDep is a worker whose progress another one needs: at least c+1-lag
// before the other runs c. seen caches the last progress loaded.
type laDep struct {
	w    *laWorker
	lag  uint64
	seen uint64
}

// newLookahead returns the lookahead engine for a partition of the
// clusters over workers (see cutPartition).
func newLookahead(s *Simulation, part [][]int) *laEngine {
	e := &laEngine{sim: s}
	workerOf := make([]int, len(s.units))
	for wi, cls := range part {
		w := &laWorker{e: e}
		w.progress.Store(none)
		for _, cl := range cls {
			for _, ui := range s.plan.clusters[cl] {
				workerOf[ui] = wi
			}
		}
		e.workers = append(e.workers, w)
	}
	for _, u := range s.order {
		w := e.workers[workerOf[u.index]]
		w.units = append(w.units, u)
		u.lw = w
	}
	clusterWorker := make([]int, len(s.plan.clusters))
	for wi, cls := range part {
		for _, cl := range cls {
			clusterWorker[cl] = wi
		}
	}
	lag := workerLags(s, part)
	for wi, w := range e.workers {
		raw := make([]laDep, len(e.workers)-1+2*depPad)
		w.deps = raw[depPad : depPad : len(raw)-depPad]
		for vi, v := range e.workers {
			if vi != wi {
				w.deps = append(w.deps, laDep{w: v, lag: lag[vi][wi]})
			}
		}
	}
	prog := make([]*atomic.Uint64, len(part))
	for i, w := range e.workers {
		prog[i] = &w.progress
	}
	s.setParallel(workerOf, prog)
	return e
}

func (e *laEngine) size() int { return len(e.workers) }

// workerLags returns lag[v][w] for the workers of part: the smallest
// delay of the edges from v's clusters to w's, at most the lookahead (the
// lookahead when there are none). w may run cycle c once v has finished
// c-lag[v][w].
func workerLags(s *Simulation, part [][]int) [][]uint64 {
	workerOf := make([]int, len(s.plan.clusters))
	for w, cls := range part {
		for _, cl := range cls {
			workerOf[cl] = w
		}
	}
	lag := make([][]uint64, len(part))
	for i := range lag {
		lag[i] = make([]uint64, len(part))
		for j := range lag[i] {
			lag[i][j] = s.lookahead
		}
	}
	for _, l := range s.plan.links {
		if from, to := workerOf[l.from], workerOf[l.to]; from != to {
			lag[from][to] = min(lag[from][to], max(l.minDelay, 1))
		}
	}
	return lag
}

// drifts reports whether every two workers of part may be a cycle or more
// apart: lag[v][w] + lag[w][v] >= 3, so that one of them can run ahead of
// the other. Two workers joined by delay-1 edges both ways synchronize
// every cycle, which the barrier engine does better (see newParallel).
func drifts(s *Simulation, part [][]int) bool {
	lag := workerLags(s, part)
	for v := range lag {
		for w := range v {
			if lag[v][w]+lag[w][v] < 3 {
				return false
			}
		}
	}
	return true
}

// cutPartition places clusters on at most n workers so that the edges
// between workers have long delays where the topology allows it: a worker
// runs ahead of another by the smallest delay between them (up to L), so
// one delay-1 edge between two workers makes them synchronize every cycle.
// For a threshold t from L down to 1 it joins the clusters linked by an
// edge of delay under t into groups and partitions the groups longest
// processing time first (partition); the first t whose most loaded worker
// carries at most balanceSlack of its fair share wins. t = 1 joins nothing:
// the barrier engine's partition. The result depends only on the topology
// and the costs.
//
// Costs are clamped at clampCost times the median cluster's: a measured
// cost (see calibrate) includes the host descheduling the goroutine in
// the middle of a Tick, which on a loaded machine adds milliseconds to
// whichever unit it hits and would make a balanced cut look lopsided.
func cutPartition(s *Simulation, n int, measured func(cl int) int64) [][]int {
	ncl := len(s.plan.clusters)
	costs := make([]int64, ncl)
	for cl := range ncl {
		costs[cl] = measured(cl)
	}
	sorted := slices.Clone(costs)
	slices.Sort(sorted)
	for cl := range costs {
		costs[cl] = min(costs[cl], max(clampCost*sorted[ncl/2], 1))
	}
	cost := func(cl int) int64 { return costs[cl] }
	var total int64
	for _, c := range costs {
		total += c
	}
	for t := s.lookahead; t > 1; t-- {
		uf := newUnionFind(ncl)
		for _, l := range s.plan.links {
			if l.minDelay < t {
				uf.union(l.from, l.to)
			}
		}
		var groups [][]int // clusters of each group, in plan order
		id := make(map[int]int)
		for cl := range ncl {
			r := uf.find(cl)
			g, ok := id[r]
			if !ok {
				g = len(groups)
				id[r] = g
				groups = append(groups, nil)
			}
			groups[g] = append(groups[g], cl)
		}
		if len(groups) < min(n, 2) {
			continue
		}
		gcost := func(g int) int64 {
			var c int64
			for _, cl := range groups[g] {
				c += cost(cl)
			}
			return c
		}
		gpart := partition(groups, n, gcost)
		var most int64
		part := make([][]int, len(gpart))
		for w, gs := range gpart {
			var load int64
			for _, g := range gs {
				load += gcost(g)
				part[w] = append(part[w], groups[g]...)
			}
			slices.Sort(part[w])
			most = max(most, load)
		}
		if float64(most) <= balanceSlack*float64(total)/float64(len(part)) {
			return part
		}
	}
	if part := trailCut(s, n, cost); part != nil {
		return part
	}
	return partition(s.plan.clusters, n, cost)
}

// trailCut is cutPartition's last resort, for topologies whose feedback
// loops of short edges leave no balanced cut: two workers, a leader and a
// trailer that no short edge leaves. The trailer runs behind the leader
// (its incoming edges may have delay 1) and the leader up to t-1 cycles
// ahead of it, t the smallest delay of the edges back, so neither waits
// for the other in most cycles. (The CPU pipeline: the L2, whose responses
// take 10 cycles, trails everything else.)
//
// For each threshold t, from L down to 2, edges of delay under t are
// short; the candidates for the trailer are the sink components of the
// graph of short edges (strongly connected, no short edge leaving them),
// each alone and all together; the one that leaves the most loaded worker
// the least wins (ties: the first in cluster order). The result depends
// only on the topology and the costs; nil when no threshold has a trailer
// that is not every cluster.
func trailCut(s *Simulation, n int, cost func(cl int) int64) [][]int {
	ncl := len(s.plan.clusters)
	if n < 2 || ncl < 2 {
		return nil
	}
	var total int64
	for cl := range ncl {
		total += cost(cl)
	}
	for t := s.lookahead; t > 1; t-- {
		succ := make([][]int, ncl)
		for _, l := range s.plan.links {
			if l.minDelay < t {
				succ[l.from] = append(succ[l.from], l.to)
			}
		}
		comp, ncomp := components(succ)
		load := make([]int64, ncomp)
		sink := make([]bool, ncomp)
		for i := range sink {
			sink[i] = true
		}
		for cl := range ncl {
			load[comp[cl]] += cost(cl)
			for _, to := range succ[cl] {
				if comp[to] != comp[cl] {
					sink[comp[cl]] = false
				}
			}
		}
		best, bestMost := -1, int64(0) // -1: none; ncomp: every sink together
		var sinks int64
		for c := range ncomp {
			if !sink[c] {
				continue
			}
			sinks += load[c]
			if most := max(load[c], total-load[c]); load[c] < total && (best < 0 || most < bestMost) {
				best, bestMost = c, most
			}
		}
		if most := max(sinks, total-sinks); sinks < total && best >= 0 && most < bestMost {
			best = ncomp
		}
		if best < 0 {
			continue
		}
		part := make([][]int, 2)
		for cl := range ncl {
			if c := comp[cl]; c == best || best == ncomp && sink[c] {
				part[1] = append(part[1], cl)
			} else {
				part[0] = append(part[0], cl)
			}
		}
		if len(part[0]) > 0 {
			return part
		}
	}
	return nil
}

// components returns the strongly connected components of the graph
// (Tarjan's algorithm, iterative): each vertex's component and how many
// there are.
func components(succ [][]int) (comp []int, n int) {
	nv := len(succ)
	comp = make([]int, nv)
	index := make([]int, nv) // 0: unvisited; else visit order + 1
	low := make([]int, nv)
	onStack := make([]bool, nv)
	var stack []int
	type frame struct{ v, next int }
	var calls []frame
	visited := 0
	for root := range nv {
		if index[root] != 0 {
			continue
		}
		calls = append(calls, frame{root, 0})
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			v := f.v
			if f.next == 0 {
				visited++
				index[v], low[v] = visited, visited
				stack = append(stack, v)
				onStack[v] = true
			}
			if f.next < len(succ[v]) {
				w := succ[v][f.next]
				f.next++
				if index[w] == 0 {
					calls = append(calls, frame{w, 0})
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				u := calls[len(calls)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = n
					if w == v {
						break
					}
				}
				n++
			}
		}
	}
	return comp, n
}

// clampCost bounds a cluster's cost in cutPartition, in medians.
const clampCost = 4

// balanceSlack is how much more than its fair share of the cost the most
// loaded worker may carry in exchange for longer delays between workers.
const balanceSlack = 1.25

// run runs cycles up to end (exclusive), in segments that end at the
// observation points. untilDone is not supported (RunUntilDone runs the
// sequential engine under a lookahead).
func (e *laEngine) run(end uint64, _ bool) bool {
	s := e.sim
	for s.cycle < end && !s.halted() {
		e.segment(min(end, s.obs.next))
		if s.cycle == s.obs.next && e.panicErr == nil {
			s.obs.observe(s, s.cycle)
		}
	}
	return false
}

// segment runs the workers from the current cycle up to end.
func (e *laEngine) segment(end uint64) {
	s := e.sim
	e.end = end
	e.reset(s)
	e.m = pressure.New(pressure.Balanced)
	for _, w := range e.workers {
		st, err := e.m.Register("chronon-worker")
		if err != nil {
			panic("chronon: pressure registration failed: " + err.Error()) // only after Close, which segment does last
		}
		w.st = st
		w.progress.Store(s.cycle)
		for i := range w.deps {
			w.deps[i].seen = s.cycle
		}
	}
	s.par = &e.stops
	start := s.cycle
	var wg sync.WaitGroup
	for _, w := range e.workers[1:] {
		wg.Go(func() { w.loop(start) })
	}
	e.workers[0].loop(start)
	wg.Wait()
	e.m.Close()
	s.par = nil // every progress is none again: sequential segments never wait on one
	e.finish(s, min(end, e.stopAt.Load()))
}

// loop runs the worker's cycles from start until the segment's end, the
// stop or a panic in one of its units.
//
// When it leaves, its progress becomes none, which releases anyone waiting
// for it: what still runs is either a cycle before the one it stopped at,
// whose dependencies on it are met already, or, after a panic, a cycle
// after the panic's (of a worker that ran ahead), which the run discards.
func (w *laWorker) loop(start uint64) {
	e := w.e
	defer func() {
		w.progress.Store(none)
		e.m.Wake()
	}()
	for c := start; c < e.end; c++ {
		for i := range w.deps {
			w.await(&w.deps[i], c)
		}
		if c >= e.stopAt.Load() { // after the waits: see laEngine
			return
		}
		if w.waited || c%wakeEvery == 0 {
			w.st.OnWork() // ends the wait's streak; now and then, keeps the level up
			w.waited = false
		}
		if !w.tick(c) {
			return // nothing of the worker runs after its panic
		}
		w.cycles++
		ringbuf.StoreRelease(&w.progress, c+1)
		if c%wakeEvery == 0 {
			e.m.Wake() // after the store: the Dekker handshake of package pressure
		} else {
			e.m.WakeIfParked()
		}
	}
}

// wakeEvery is how often, in cycles, a worker that does not wait calls
// Wake after its progress store (and OnWork before its cycle); in the
// other cycles it calls WakeIfParked, which has no fence. Wake every cycle
// cost the CPU pipeline's leading worker about 100 ns: its fence waits for
// the store to leave the core, and the progress line is in the trailing
// worker's cache, which polls it. A worker parked waiting for this one's
// progress is woken by the next WakeIfParked that sees its announcement,
// and at the latest by the next Wake: wakeEvery cycles later, or when this
// one waits itself (await calls Wake first), or leaves. So no wakeup is
// lost, and no two workers can park waiting for each other.
const wakeEvery = 8

// await waits until d's worker may be depended on for cycle c, or the
// stop makes c not run.
func (w *laWorker) await(d *laDep, c uint64) {
	need := c + 1 - min(c+1, d.lag) // seen may be none: no sums
	if d.seen >= need {
		return
	}
	w.syncs++
	w.waited = true
	w.e.m.Wake() // before waiting: see wakeEvery
	for {
		d.seen = d.w.progress.Load()
		if d.seen >= need || w.e.stopAt.Load() <= c {
			return
		}
		w.st.OnEmpty() // false only after Close, which waits for every worker
	}
}

// tick ticks the worker's units in cycle c and reports whether none
// panicked.
func (w *laWorker) tick(c uint64) (ok bool) {
	var u *unitState
	defer func() {
		if r := recover(); r != nil {
			w.e.panicked(stopKey{c, u.pos}, &UnitError{Unit: u.name, Cycle: c, Value: r})
			ok = false
		}
	}()
	for _, u = range w.units {
		u.cycle = c
		u.unit.Tick()
	}
	return true
}

// await blocks the goroutine ticking u, a worker of the lookahead engine,
// until *p >= next (see conn.credits and InPort.flush).
func (u *unitState) await(p *atomic.Uint64, next uint64) {
	w := u.lw
	w.tickWaits++
	w.e.m.Wake() // before waiting: see wakeEvery
	for p.Load() < next {
		w.st.OnEmpty()
	}
	w.st.OnWork()
}
