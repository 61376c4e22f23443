package chronon

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// SetWorkers selects the engine for the following runs: 1 is the
// sequential engine; n > 1 asks for the parallel engine with up to n worker
// goroutines (never more than there are clusters). Call it after Build,
// between runs. Results are bit-identical to the sequential engine's for
// every n.
//
// When the topology breaks a safety rule of the parallel engine (see
// Engine), the runs stay sequential; SetWorkers logs the reason through
// log/slog and Engine reports it. It fails only if the simulation is not
// built or n < 1.
func (s *Simulation) SetWorkers(n int) error {
	if !s.built {
		return ErrNotBuilt
	}
	if n < 1 {
		return fmt.Errorf("chronon: workers must be at least 1, not %d", n)
	}
	s.workers, s.eng, s.seqReason, s.calibrated = n, nil, "", false
	s.seqPer, s.seqLeft, s.backoff = 0, 0, 0
	s.setParallel(nil, nil)
	if n == 1 {
		return nil
	}
	if r := s.unsafeReason(); r != "" {
		s.seqReason = r
		s.info("chronon: running sequentially", "workers", n, "reason", r)
		return nil
	}
	s.eng = s.newParallel(n, func(cl int) int64 { return clusterCost(s, cl) })
	return nil
}

// parallelEngine is a parallel engine: the barrier engine (engine.go) for
// a lookahead of 1, the lookahead engine (lookahead.go) beyond.
type parallelEngine interface {
	// run runs cycles up to end (exclusive), or until every Doner is done
	// when untilDone (the barrier engine only), and reports the latter.
	run(end uint64, untilDone bool) (allDone bool)
	size() int // workers
}

// newParallel returns the parallel engine for the simulation's lookahead,
// its clusters partitioned over at most n workers by cost. The lookahead
// engine pays off only if every two workers may drift a cycle or more
// apart (drifts: long delays both ways, or one worker trailing another
// whose edges back to it are long): where two workers are joined by delay-1
// edges both ways they synchronize every cycle anyway, and the barrier
// engine then does better,
// since its workers claim each other's clusters when the host deschedules
// one (measured on the CPU pipeline under load: 0.7-1.2 us a cycle against
// 2.3-4.3 us). Both engines follow the same stop rules, so the choice
// changes no result.
func (s *Simulation) newParallel(n int, cost func(cl int) int64) parallelEngine {
	for _, u := range s.units {
		u.lw = nil
	}
	if s.lookahead > 1 && s.maySleep() {
		// The lookahead engine has no sleeping scheduler: the barrier
		// engine's (sleep_engine.go) keeps the results.
		s.info("chronon: lockstep engine", "lookahead", s.lookahead, "reason", "sleeping units or clocks")
	} else if s.lookahead > 1 {
		if part := cutPartition(s, n, cost); drifts(s, part) {
			return newLookahead(s, part)
		}
	}
	return newEngine(s, n, cost)
}

// DefaultParallelThreshold is the default of SetParallelThreshold.
const DefaultParallelThreshold = 4 * time.Microsecond

// SetParallelThreshold sets the sequential cycle cost under which the
// parallel engine is not worth its per-cycle handshake between workers
// (a few hundred nanoseconds of cache-line transfers, more on a loaded
// machine). The first Run after SetWorkers(n > 1) runs its first cycles
// sequentially to measure that cost and keeps the sequential engine, with a
// logged reason, if a cycle is cheaper than d. Zero always uses the parallel
// engine. The calibration waits for a Run of at least 1,024 cycles (shorter
// runs use the parallel engine uncalibrated); RunUntilDone does not
// calibrate.
func (s *Simulation) SetParallelThreshold(d time.Duration) {
	s.threshold = max(d, 0)
}

// Engine reports how many workers the next run uses (1 for the sequential
// engine) and, when more were asked for but the sequential engine was kept,
// why. The safety rules that keep it sequential:
//
//   - the plan has a single cluster (everything joined by zero-delay edges);
//   - a connection has both Unlimited capacity and Unlimited rate, so no
//     physical lane can cover what its producer may push in a cycle while
//     the receiver still works on the previous one.
//
// Counters and traces do not force it: both engines observe between cycles
// (see DumpCounters and TraceTo), with identical output.
func (s *Simulation) Engine() (workers int, reason string) {
	if s.eng == nil {
		return 1, s.seqReason
	}
	return s.eng.size(), ""
}

// unsafeReason checks the static safety rules.
func (s *Simulation) unsafeReason() string {
	if len(s.plan.clusters) < 2 {
		return "a single cluster of zero-delay-connected units"
	}
	for _, in := range s.ins {
		if name := in.unboundedConn(); name != "" {
			return fmt.Sprintf("connection %s has unlimited capacity and rate", name)
		}
	}
	return ""
}

// newEngine partitions the clusters over at most n workers by cost.
func newEngine(s *Simulation, n int, cost func(cl int) int64) *engine {
	part := partition(s.plan.clusters, n, cost)
	e := &engine{sim: s, n: uint64(len(s.plan.clusters))}
	for wi, cls := range part {
		l := &clusterList{chunk: uint64(max(1, len(cls)/4))}
		for _, cl := range cls {
			units := make([]*unitState, len(s.plan.clusters[cl]))
			for i, ui := range s.plan.clusters[cl] {
				units[i] = s.units[ui]
			}
			l.clusters = append(l.clusters, units)
		}
		e.lists = append(e.lists, l)
		e.workers = append(e.workers, &worker{e: e, id: wi})
	}
	for _, u := range s.order {
		if d, ok := u.unit.(Doner); ok {
			e.doners = append(e.doners, d)
		}
	}
	s.setParallel(s.plan.cluster, nil)
	return e
}

func (e *engine) size() int { return len(e.workers) }

// clusterCost estimates a cluster's tick cost: one per unit and one per
// connection it receives on (fan-in merges are the costliest receive).
func clusterCost(s *Simulation, cl int) int64 {
	var cost int64
	for _, ui := range s.plan.clusters[cl] {
		cost++
		for _, in := range s.units[ui].ins {
			cost += int64(in.connCount())
		}
	}
	return cost
}

// partition places clusters on at most n workers, longest processing time
// first: clusters by decreasing cost (ties by index), each onto the least
// loaded worker (ties by lowest index). Each worker's clusters are returned
// in plan order. With the static cost estimate the result depends only on
// the topology; the first run's calibration repartitions by measured cost.
func partition(clusters [][]int, n int, cost func(int) int64) [][]int {
	n = min(n, len(clusters))
	idx := make([]int, len(clusters))
	costs := make([]int64, len(clusters))
	for i := range idx {
		idx[i], costs[i] = i, cost(i)
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(costs[b], costs[a]) })
	load := make([]int64, n)
	part := make([][]int, n)
	for _, cl := range idx {
		w := 0
		for i := range load {
			if load[i] < load[w] {
				w = i
			}
		}
		load[w] += costs[cl]
		part[w] = append(part[w], cl)
	}
	for _, p := range part {
		slices.Sort(p)
	}
	return part
}

// setParallel prepares the ports for a parallel engine, groupOf giving each
// unit's group of units that run on one goroutine in a cycle, or for the
// sequential engine when groupOf is nil. Under the barrier engine a group
// is a cluster: clusters move between workers from cycle to cycle, so every
// connection between clusters is treated as crossing workers. Under the
// lookahead engine it is a worker, and prog gives each worker's progress.
func (s *Simulation) setParallel(groupOf []int, prog []*atomic.Uint64) {
	for _, in := range s.ins {
		in.setParallel(groupOf, prog)
	}
}

// setParallel marks the port's connections from another group as cross,
// publishing the current counts and credits.
func (p *InPort[T]) setParallel(groupOf []int, prog []*atomic.Uint64) {
	p.waits = false
	for _, k := range p.conns {
		k.cross = groupOf != nil && groupOf[k.out.u.index] != groupOf[p.u.index]
		k.rcross = k.cross
		k.pubPushes.Store(k.pushes)
		k.rprog, k.pprog = nil, nil
		if !k.cross {
			continue
		}
		if prog != nil {
			k.rprog, k.pprog = prog[groupOf[p.u.index]], prog[groupOf[k.out.u.index]]
			p.waits = true
		}
		k.clog = newCycleLog(2*int(k.in.u.sim.lookahead) + 2) // see credits
		if k.popsBefore > 0 {
			k.clog.advance(k.popCycle-1, k.popsBefore) // any cycle before popCycle will do
		}
		if k.pops > k.popsBefore {
			k.clog.advance(k.popCycle, k.pops)
		}
	}
	p.setGap()
}

func (p *InPort[T]) connCount() int { return len(p.conns) }

// unboundedConn names a connection of the port with neither capacity nor
// rate limit, if any.
func (p *InPort[T]) unboundedConn() string {
	for _, k := range p.conns {
		if k.capacity == 0 && k.rate == 0 {
			return k.name
		}
	}
	return ""
}
