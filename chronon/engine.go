package chronon

import (
	"sync"
	"sync/atomic"

	"github.com/lanework/lanework/pressure"
)

// engine is the barrier engine, the parallel engine for a lookahead of 1
// (and for cuts with delay-1 edges; see newParallel): the plan's clusters, placed on workers
// (goroutines) by cost, every worker running the clusters of its list, and
// taking over unclaimed clusters of the other lists once its own are done,
// so that a worker descheduled by the host does not stall the others for
// long. There is no barrier object: each list has its own claim counter on
// its own cache line, finished clusters are counted in done, and the worker
// that finishes a cycle's last cluster opens the next cycle in gate.
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
// Memory ordering. The engine's own handshake (claim, done, gate, stopAt)
// and every publication chronon makes itself (pushed counts, pop-credit
// ledgers, cancel logs, broadcast tails and cursors) are sync/atomic
// operations, sequentially consistent in the Go memory model. The lanes are
// ringbuf rings, whose publication store is a release store: in non-race
// amd64 builds a plain MOV (ordered by x86-TSO and the compiler, outside
// the Go memory model; see ringbuf/release.go), STLR on arm64, and a
// sync/atomic store elsewhere and under the race detector, which therefore
// checks the argument below under the Go memory model proper. A cluster's
// effects in cycle c (ring pushes and the other publications, stop
// requests) precede, in its goroutine's program order, its done.Add, a
// sequentially consistent read-modify-write (a locked instruction on amd64,
// after which no earlier store is pending); the worker whose Add completes
// the cycle stores gate after it; a worker loads gate before claiming a
// cluster of the next cycle. So everything of cycle c happens before
// anything of c+1.
type engine struct {
	sim     *Simulation
	workers []*worker
	lists   []*clusterList
	n       uint64 // clusters
	doners  []Doner

	start, end uint64
	untilDone  bool
	allDone    bool // decided by the worker that opened the stop

	gate atomic.Uint64 // cycle<<1 | stop: the cycle now open to claims, or the first not to run
	_    [cacheLine - 8]byte
	done atomic.Uint64 // clusters finished since start
	_    [cacheLine - 8]byte
	m    *pressure.Manager
	sl   *sleepRun // with sleeping units (sleep_engine.go)

	stops
}

// clusterList is the clusters first placed on one worker, in plan order, and the
// claim counter of the current cycle: cycle<<24 | next index.
type clusterList struct {
	claim    atomic.Uint64
	_        [cacheLine - 8]byte
	clusters [][]*unitState
	chunk    uint64 // most clusters per claim
}

const idxBits = 24 // clusters per list < 1<<24 (Connect caps nothing, but 16M clusters is far beyond use)

// worker is one goroutine of a run. Only that goroutine touches it.
type worker struct {
	e  *engine
	id int // its own list is lists[id]
	st *pressure.Stage
}

// open decides, between cycles, whether cycle c runs, and opens it or the
// stop. Only one goroutine calls it per cycle: the coordinator before the
// first, then the worker that finished the cycle before c. No cluster runs
// meanwhile, so it may ask the Doners.
func (e *engine) open(c uint64) {
	if o := &e.sim.obs; c == o.next && !e.hasPanic(c) {
		o.observe(e.sim, c) // between cycles, as the sequential engine does (see observer)
	}
	stop := uint64(0)
	switch {
	case e.untilDone && allDone(e.doners):
		e.allDone, stop = true, 1
	case c == e.end || e.stopAt.Load() <= c:
		stop = 1
	}
	e.gate.Store(c<<1 | stop)
	e.m.Wake() // after the store: the Dekker handshake of package pressure
}

// run runs cycles from the simulation's current cycle up to end (exclusive)
// on every worker and returns whether it stopped because every Doner was
// done (only checked when untilDone).
func (e *engine) run(end uint64, untilDone bool) (allDone bool) {
	s := e.sim
	e.start, e.end, e.untilDone, e.allDone = s.cycle, end, untilDone, false
	e.reset(s)
	e.done.Store(0)
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
	}
	s.par = &e.stops
	loop := (*worker).loop
	if s.sleep != nil {
		loop = (*worker).loopSleepy
		s.sleep.par = e
		e.sleepStart()
		e.openSleepy(s.cycle)
	} else {
		e.open(s.cycle)
	}
	var wg sync.WaitGroup
	for _, w := range e.workers[1:] {
		wg.Go(func() { loop(w) })
	}
	loop(e.workers[0])
	wg.Wait()
	e.m.Close()
	s.par = nil
	if s.sleep != nil {
		s.sleep.par = nil
	}
	e.finish(s, e.gate.Load()>>1)
	return e.allDone
}

// loop runs open cycles until the stop opens.
func (w *worker) loop() {
	e := w.e
	for c := e.start; ; {
		g := w.await(c)
		if g&1 == 1 {
			return
		}
		c = g >> 1 // at least c; later if the others ran whole cycles meanwhile
		// Count the clusters this worker ran, and publish them with one
		// add once no list has any left in c: one contended atomic per
		// worker and cycle rather than one per chunk.
		ran := uint64(0)
		for i := range e.lists {
			l := e.lists[(w.id+i)%len(e.lists)]
			for {
				lo, hi, ok := l.take(c)
				if !ok {
					break
				}
				for _, cl := range l.clusters[lo:hi] {
					w.runCluster(c, cl)
				}
				ran += hi - lo
			}
		}
		if ran > 0 {
			w.finished(c, ran)
		}
		c++
	}
}

// await waits until gate opens cycle c or later (or the stop) and returns
// it. The gate is monotonic, so a value once seen stays a lower bound.
func (w *worker) await(c uint64) uint64 {
	for {
		if g := w.e.gate.Load(); g>>1 >= c {
			w.st.OnWork()
			return g
		}
		w.st.OnEmpty() // false only after Close, which waits for every worker
	}
}

// take claims the next chunk of the list's clusters in cycle c. Cycle c is
// tagged c+1, so that the counter's reset value 0 is older than any cycle.
// Chunks shrink as the list drains (a quarter of what is left, at most
// chunk, at least one cluster): few claims while there is plenty of work,
// and single clusters at the end of the cycle, so that a worker that runs
// out of work waits for at most one cluster of another's.
func (l *clusterList) take(c uint64) (lo, hi uint64, ok bool) {
	return claimChunk(&l.claim, c, uint64(len(l.clusters)), l.chunk)
}

// claimChunk is take on a claim counter over n clusters.
func claimChunk(claim *atomic.Uint64, c, n, chunk uint64) (lo, hi uint64, ok bool) {
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
		hi = lo + max(1, min(chunk, (n-lo)/4))
		if claim.CompareAndSwap(v, tag|hi) {
			return lo, hi, true
		}
	}
}

// finished counts k clusters of cycle c as done; the worker completing the
// cycle opens the next one.
func (w *worker) finished(c, k uint64) {
	e := w.e
	if e.done.Add(k) == (c-e.start+1)*e.n {
		e.open(c + 1)
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
