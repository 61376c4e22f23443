package chronon

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/lanework/lanework/pressure"
	"github.com/lanework/lanework/ringbuf"
)

// engine is the barrier engine, the parallel engine for a lookahead of 1
// (and for cuts with delay-1 edges; see newParallel): the plan's clusters,
// placed on workers (goroutines) by cost, every worker running the clusters
// of its own list, and taking over what is left of other lists when a
// cycle is late, so that a worker descheduled by the host does not stall
// the others for long. There is no barrier object: each list has its own
// claim counter, and each worker publishes how many clusters it has
// finished on a cache line of its own (fin); cycle c is complete when the
// counts add up to every cluster of every cycle through c.
//
// The scheduling contract (see docs/chronon.md): a cluster may run cycle c
// once every cluster has completed c-1, and within a cycle clusters run in
// any order and concurrently. That makes results bit-identical to the
// sequential engine for any partition and interleaving:
//
//   - a message read in cycle c was sent in c-1 or earlier (cross-cluster
//     edges have delay >= 1), pushed before its cluster was counted done;
//   - a flush in c covers what was sent before c, so it needs the producer
//     through c-1 regardless of the edge delay;
//   - pop credits for producer cycle c are the receiver's pops before c, so
//     the producer needs the receiver through c-1 (see conn.credits);
//   - a termination, panic or overflow in cycle c must stop every unit at
//     the end of c (with lookahead L, c+L-1), as in the sequential engine,
//     so no unit may run c+1 before every unit has finished c and had the
//     chance to request a stop; and RunUntilDone asks every Doner between
//     cycles.
//
// Run-ahead along long delays is the lookahead engine's (lookahead.go).
//
// Between cycles. Observation points, and with RunUntilDone every cycle,
// need one goroutine to act while no cluster runs: worker 0, which, once
// the cycle before is complete, observes, asks the Doners, and then
// publishes the next cycle that needs it in step; the other workers wait
// for step to pass a cycle before they run it.
//
// Memory ordering. A worker's effects in cycle c (ring pushes and the
// other publications, stop requests) precede, in its program order, its
// store of fin; a worker that loads that value of fin, or a later one,
// sees them (a release store and an acquire load: ringbuf.StoreRelease and
// sync/atomic; see cycleLog). A worker counts a cluster of c+1 only after
// loading counts that complete c, so counts that add up to cycle c's total
// are complete, and by transitivity through those loads they make every
// effect of c visible. The lanes are ringbuf rings, which publish with the
// same release store. Under the race detector every one of these is a
// sync/atomic operation, which checks the argument under the Go memory
// model proper. Stop requests lower stopAt with sync/atomic before the
// requester's fin store, so a worker that saw cycle c complete sees every
// stop requested through c.
type engine struct {
	sim     *Simulation
	workers []*worker
	lists   []*clusterList
	n       uint64 // clusters
	doners  []Doner
	eager   bool // more workers than Ps: steal at once (see worker.loop)

	start, end uint64
	untilDone  bool
	allDone    bool // decided by worker 0 (see between)

	// Each word below is written by a different party, on lines of its own
	// two lines apart (adjacent-line prefetching pairs lines).
	_ [2 * cacheLine]byte
	// step is the next cycle before which worker 0 acts between cycles
	// (observation, Doners); none when no such cycle remains. Written by
	// worker 0 only, read by every worker in every cycle.
	step atomic.Uint64
	// quit is the first cycle not to run because every Doner is done
	// (none otherwise); worker 0 stores it before step.
	quit atomic.Uint64
	_    [2*cacheLine - 16]byte
	// guidedUntil is the cycle until which owners claim their lists in
	// guided chunks (see runList); a late worker raises it. Written
	// rarely, read by every worker in every cycle.
	guidedUntil atomic.Uint64
	_           [2*cacheLine - 8]byte
	// The sleeping engine (sleep_engine.go) opens each cycle on one
	// goroutine instead: gate is the cycle open to claims, done the
	// clusters finished since start.
	gate atomic.Uint64 // cycle<<1 | stop: the cycle now open to claims, or the first not to run
	_    [2*cacheLine - 8]byte
	done atomic.Uint64
	_    [2*cacheLine - 8]byte
	m    *pressure.Manager
	sl   *sleepRun // with sleeping units (sleep_engine.go)

	stops
}

// clusterList is the clusters first placed on one worker, in plan order, and the
// claim counter of the current cycle: cycle<<24 | next index.
type clusterList struct {
	_        [cacheLine]byte
	claim    atomic.Uint64
	_        [2*cacheLine - 8]byte
	clusters [][]*unitState
	chunk    uint64 // most clusters per guided claim
}

const idxBits = 24 // clusters per list < 1<<24 (Connect caps nothing, but 16M clusters is far beyond use)

// worker is one goroutine of a run. Only that goroutine touches it, except
// fin, which the other workers load.
type worker struct {
	_ [cacheLine]byte
	// fin is the clusters the worker has finished since the run's start
	// (published with a release store after their effects).
	fin atomic.Uint64
	_   [2*cacheLine - 8]byte

	e       *engine
	id      int // its own list is lists[id]
	st      *pressure.Stage
	settled uint64 // the worker's own value of fin

	// Counters of the worker's own goroutine, read between runs: clusters
	// it ran, and of those, clusters of other lists.
	ran, stolen uint64
}

// run runs cycles from the simulation's current cycle up to end (exclusive)
// on every worker and returns whether it stopped because every Doner was
// done (only checked when untilDone).
func (e *engine) run(end uint64, untilDone bool) (allDone bool) {
	s := e.sim
	e.start, e.end, e.untilDone, e.allDone = s.cycle, end, untilDone, false
	e.reset(s)
	e.done.Store(0)
	e.guidedUntil.Store(0)
	for _, l := range e.lists {
		l.claim.Store(0)
	}
	e.m = pressure.New(pressure.Balanced)
	for _, w := range e.workers {
		st, err := e.m.Register("chronon-worker")
		if err != nil {
			panic("chronon: pressure registration failed: " + err.Error()) // only after Close, which run does last
		}
		w.st = st
		w.fin.Store(0)
		w.settled = 0
	}
	e.quit.Store(none)
	s.par = &e.stops
	e.eager = len(e.workers) > runtime.GOMAXPROCS(0)
	loop := (*worker).loop
	if s.sleep != nil {
		loop = (*worker).loopSleepy
		s.sleep.par = e
		e.sleepStart()
		e.openSleepy(s.cycle)
	} else {
		e.step.Store(e.nextStep(s.cycle))
	}
	var wg sync.WaitGroup
	for _, w := range e.workers[1:] {
		wg.Go(func() { loop(w) })
	}
	loop(e.workers[0])
	wg.Wait()
	e.m.Close()
	s.par = nil
	last := e.gate.Load() >> 1
	if s.sleep != nil {
		s.sleep.par = nil
	} else {
		last = min(e.end, e.stopAt.Load(), e.quit.Load())
	}
	e.finish(s, last)
	return e.allDone
}

// loop runs cycles until the run's end or its stop.
//
// A worker runs the clusters of its own list, then waits for the cycle to
// complete. Only when that wait lasts (stealPolls polls) does it claim
// what is left of the cycle on the other lists: a worker the host
// descheduled stalls the others for about a microsecond and the chunk it
// holds, while on idle cores every cluster stays on its worker, with its
// units' state in that core's cache. Taking clusters at once, as this
// engine did first, moved about four clusters in ten between cores in every
// cycle of the CPU pipeline (whose ticks cost tens of nanoseconds), each
// move pulling the cluster's lines across. With more workers than Ps a
// worker is often not running at all, so then everyone takes at once.
func (w *worker) loop() {
	e := w.e
	own := e.lists[w.id]
	for c := e.start; ; {
		if w.id == 0 {
			if c == e.step.Load() {
				e.between(c)
			}
		} else if c >= e.step.Load() {
			w.awaitStep(c)
		}
		if c >= e.end || c >= e.stopAt.Load() || c >= e.quit.Load() { // after the waits: see engine
			break
		}
		ran := w.runList(own, c, !e.eager && c >= e.guidedUntil.Load())
		if e.eager {
			ran += w.steal(c)
		}
		if ran > 0 {
			w.finished(ran)
		}
		c = w.await(c)
	}
	e.m.Wake() // a worker waiting for step may wait on a worker that left
}

// between is worker 0's work between cycles, before cycle c (see engine):
// the observation due at c, and with RunUntilDone the Doners. The cycle
// before c is complete and no other worker runs c before step passes it.
func (e *engine) between(c uint64) {
	if o := &e.sim.obs; c == o.next && !e.hasPanic(c) {
		o.observe(e.sim, c) // between cycles, as the sequential engine does (see observer)
	}
	if e.untilDone && allDone(e.doners) {
		e.allDone = true
		e.quit.Store(c)
	}
	e.step.Store(max(e.nextStep(c+1), c+1))
	e.m.Wake() // after the store: the Dekker handshake of package pressure
}

// nextStep returns the first cycle from c on that needs worker 0 between
// cycles, or none.
func (e *engine) nextStep(c uint64) uint64 {
	if e.untilDone {
		return c
	}
	return max(e.sim.obs.next, c)
}

// awaitStep waits until worker 0 has acted before cycle c. Like await, it
// wakes the parked workers before it waits: worker 0 may be one of them.
func (w *worker) awaitStep(c uint64) {
	e := w.e
	for polls := 0; e.step.Load() <= c; polls++ {
		if e.stopAt.Load() <= c {
			return // the run stops before c; worker 0 may have left
		}
		if polls == 0 {
			e.m.Wake()
		}
		w.st.OnEmpty() // false only after Close, which waits for every worker
	}
	w.st.OnWork()
}

// finished publishes that the worker finished ran more clusters. It wakes
// no one: see await.
func (w *worker) finished(ran uint64) {
	w.ran += ran
	w.settled += ran
	ringbuf.StoreRelease(&w.fin, w.settled)
}

// runList runs the clusters of l it can claim in cycle c and returns how
// many. An owner whose workers have not been late lately (guidedUntil)
// claims its whole list at once: one locked instruction per worker and
// cycle instead of one per cluster, which on the CPU pipeline's cheap
// clusters cost as much as the clusters themselves. Otherwise, and on other
// workers' lists, claims are guided chunks (see take), so that a worker
// descheduled in the middle of its list holds up only the chunk it took.
func (w *worker) runList(l *clusterList, c uint64, whole bool) (ran uint64) {
	for {
		lo, hi, ok := l.take(c, whole)
		if !ok {
			return ran
		}
		for _, cl := range l.clusters[lo:hi] {
			w.runCluster(c, cl)
		}
		ran += hi - lo
	}
}

// steal runs the clusters of cycle c still unclaimed on the other lists
// and returns how many. Afterwards no list has any cluster of c left to
// claim.
func (w *worker) steal(c uint64) (ran uint64) {
	e := w.e
	for i := 1; i < len(e.lists); i++ {
		ran += w.runList(e.lists[(w.id+i)%len(e.lists)], c, false)
	}
	w.stolen += ran
	return ran
}

// stealPolls is how many empty polls a waiting worker makes before it
// takes clusters of the unfinished cycle from other lists: in the free
// spin of package pressure, about a microsecond, several times the
// imbalance of a cheap cycle and little against the milliseconds of a
// descheduled worker.
const stealPolls = 16

// guidedCycles is how long after a worker was late the owners claim in
// guided chunks.
const guidedCycles = 1024

// await waits until cycle c is complete and returns the first cycle that
// is not (later than c+1 if the others ran whole cycles meanwhile, with
// this worker's clusters). Counts that add up to k cycles' clusters mean
// those k cycles are complete: no cluster of a cycle runs before the one
// before it is complete. After stealPolls polls it runs what is left of c
// on the other lists (see loop).
func (w *worker) await(c uint64) uint64 {
	e := w.e
	need := (c - e.start + 1) * e.n
	for polls := 0; ; polls++ {
		sum := w.settled
		for _, v := range e.workers {
			if v != w {
				sum += v.fin.Load()
			}
		}
		if sum >= need {
			if polls > 0 {
				w.st.OnWork()
			}
			return e.start + sum/e.n
		}
		if polls == 0 {
			// A worker parks in pressure only after a long wait, and
			// publishing fin does not wake it: that would put a fence
			// (a store-buffer drain, waiting for the fin line to leave
			// the other cores) on the path of the last worker to finish
			// each cycle. Instead every worker wakes the parked ones
			// before it waits (after its own fin store, so the Dekker
			// handshake of package pressure holds for that store), and
			// before it leaves. A parked worker whose condition came true
			// meanwhile is then woken by the next worker to wait on it,
			// at the latest when a cycle needs its list: later by at most
			// a cycle of the others, never lost.
			e.m.Wake()
		}
		if polls == stealPolls {
			if e.guidedUntil.Load() < c+guidedCycles {
				e.guidedUntil.Store(c + guidedCycles)
			}
			if ran := w.steal(c); ran > 0 {
				w.finished(ran)
				continue
			}
		}
		w.st.OnEmpty() // false only after Close, which waits for every worker
	}
}

// awaitGate waits until gate opens cycle c or later (or the stop) and
// returns it (the sleeping engine). The gate is monotonic, so a value
// once seen stays a lower bound.
func (w *worker) awaitGate(c uint64) uint64 {
	for polls := 0; ; polls++ {
		if g := w.e.gate.Load(); g>>1 >= c {
			if polls > 0 {
				w.st.OnWork()
			}
			return g
		}
		w.st.OnEmpty() // false only after Close, which waits for every worker
	}
}

// take claims the next chunk of the list's clusters in cycle c, or all
// that are left when whole. Cycle c is tagged c+1, so that the counter's
// reset value 0 is older than any cycle. Guided chunks shrink as the list
// drains (a quarter of what is left, at most chunk, at least one cluster):
// few claims while there is plenty of work, and single clusters at the end
// of the cycle, so that a worker that runs out of work waits for at most
// one cluster of another's.
func (l *clusterList) take(c uint64, whole bool) (lo, hi uint64, ok bool) {
	n := uint64(len(l.clusters))
	if whole {
		return claimChunk(&l.claim, c, n, n, true)
	}
	return claimChunk(&l.claim, c, n, l.chunk, false)
}

// claimChunk is take on a claim counter over n clusters: a guided chunk of
// at most chunk clusters, or, when whole, everything left.
func claimChunk(claim *atomic.Uint64, c, n, chunk uint64, whole bool) (lo, hi uint64, ok bool) {
	tag := (c + 1) << idxBits
	for {
		v := claim.Load()
		switch {
		case v < tag: // first claim in cycle c
			lo = 0
		case v>>idxBits == c+1:
			lo = v & (1<<idxBits - 1)
		default:
			return 0, 0, false // a later cycle: c is over
		}
		if lo >= n {
			return 0, 0, false
		}
		hi = n
		if !whole {
			hi = lo + max(1, min(chunk, (n-lo)/4))
		}
		if claim.CompareAndSwap(v, tag|hi) {
			return lo, hi, true
		}
	}
}

// runCluster ticks a cluster's units in cycle c. A panic is recorded and
// ends the cluster's cycle; other clusters still run c, because a unit
// ordered earlier in the sequential engine may panic there too and its
// panic would be the one reported.
func (w *worker) runCluster(c uint64, units []*unitState) {
	var u *unitState
	defer func() {
		if r := recover(); r != nil {
			w.e.panicked(stopKey{c, u.pos}, &UnitError{Unit: u.name, Cycle: c, Value: r})
		}
	}()
	for _, u = range units {
		u.cycle = c
		u.unit.Tick()
	}
}
