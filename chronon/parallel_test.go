package chronon_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// ring builds n nodes in a feedback ring with delays 1 and 3 and capacity 2.
func ring(n int, setup func(i int, nd *node), opts ...chronon.SimOption) func(t *testing.T) *chronon.Simulation {
	return func(t *testing.T) *chronon.Simulation {
		t.Helper()
		s := chronon.New(opts...)
		nodes := make([]*node, n)
		for i := range nodes {
			nodes[i] = &node{seed: uint64(i) + 1, sendP: 128}
			if setup != nil {
				setup(i, nodes[i])
			}
			require.NoError(t, s.Add(fmt.Sprintf("n%d", i), nodes[i]))
		}
		for i, nd := range nodes {
			require.NoError(t, chronon.Connect(&nd.Out[0], &nodes[(i+1)%n].In, chronon.Capacity(2)))
			require.NoError(t, chronon.Connect(&nd.Out[1], &nodes[(i+n-1)%n].In, chronon.Delay(3), chronon.Rate(2)))
		}
		require.NoError(t, s.Build())
		return s
	}
}

func TestParallelPanicIsReportedLikeSequential(t *testing.T) {
	// Two units panic in the same cycle on different workers; the one
	// earlier in plan order is reported, as the sequential engine does.
	sc := scenario{
		build: ring(6, func(i int, nd *node) {
			if i == 2 || i == 5 {
				nd.panAt = 77
			}
		}),
		run: runFor(500),
	}
	o, used := checkDeterminism(t, sc, 3)
	require.Greater(t, used, 1)
	require.Contains(t, o.err, `"n2" panicked at cycle 77`)
	require.Equal(t, uint64(77), o.cycle)

	s := sc.build(t)
	s.SetParallelThreshold(0)
	require.NoError(t, s.SetWorkers(3))
	err := s.Run(500)
	var ue *chronon.UnitError
	require.ErrorAs(t, err, &ue)
	require.ErrorIs(t, err, chronon.ErrUnitPanic)
	require.Equal(t, "n2", ue.Unit)
	require.Equal(t, uint64(77), ue.Cycle)
	require.ErrorIs(t, s.Run(1), chronon.ErrUnitPanic, "the simulation stays failed")
}

func TestParallelPanicHidesLaterTermination(t *testing.T) {
	// n1 panics in cycle 50; n3, later in plan order, terminates in the same
	// cycle: the sequential engine never ticks n3 then.
	sc := scenario{
		build: ring(5, func(i int, nd *node) {
			switch i {
			case 1:
				nd.panAt = 50
			case 3:
				nd.termAt = 50
			}
		}),
		run: runFor(500),
	}
	o, _ := checkDeterminism(t, sc, 3)
	require.False(t, o.hasTrm)
	require.Contains(t, o.err, `"n1" panicked at cycle 50`)
}

func TestParallelPanicKeepsEarlierTermination(t *testing.T) {
	// Regression (issue 16, hole 2): n1 terminates in cycle 60 and n3, later
	// in plan order, panics in the same cycle. The sequential engine has
	// taken n1's request when n3 panics, so the run reports both; the
	// parallel engine used to drop the termination (it ordered the two by
	// kind before plan position).
	sc := scenario{
		build: ring(5, func(i int, nd *node) {
			switch i {
			case 1:
				nd.termAt = 60
			case 3:
				nd.panAt = 60
			}
		}),
		run: runFor(500),
	}
	o, used := checkDeterminism(t, sc, 5)
	require.Greater(t, used, 1)
	require.True(t, o.hasTrm)
	require.Equal(t, "n1", o.term.Unit)
	require.Contains(t, o.err, `"n3" panicked at cycle 60`)
	require.Equal(t, uint64(60), o.cycle)
}

func TestParallelTerminationStopsAtTheSameCycle(t *testing.T) {
	sc := scenario{
		build: ring(5, func(i int, nd *node) {
			if i == 1 || i == 3 {
				nd.termAt = 123 // same cycle: the earlier unit in plan order wins
			}
		}),
		run: func(s *chronon.Simulation) error {
			_, err := s.RunUntilTermination(10_000)
			return err
		},
	}
	o, _ := checkDeterminism(t, sc, 3)
	require.True(t, o.hasTrm)
	require.Equal(t, "n1", o.term.Unit)
	require.Equal(t, uint64(123), o.term.Cycle)
	require.Equal(t, uint64(124), o.cycle)
}

// doneNode is a node that is done after a given cycle.
type doneNode struct {
	node
	after uint64
}

func (d *doneNode) Done() bool { return d.Cycle() >= d.after }

func TestParallelRunUntilDone(t *testing.T) {
	build := func(limit uint64) func(t *testing.T) *chronon.Simulation {
		return func(t *testing.T) *chronon.Simulation {
			s := chronon.New()
			a := &doneNode{node: node{seed: 1, sendP: 100}, after: 40}
			b := &doneNode{node: node{seed: 2, sendP: 100}, after: limit}
			require.NoError(t, s.Add("a", a))
			require.NoError(t, s.Add("b", b))
			require.NoError(t, chronon.Connect(&a.Out[0], &b.In, chronon.Capacity(1)))
			require.NoError(t, chronon.Connect(&b.Out[0], &a.In, chronon.Delay(2)))
			require.NoError(t, s.Build())
			return s
		}
	}
	run := func(max uint64) func(*chronon.Simulation) error {
		return func(s *chronon.Simulation) error { return s.RunUntilDone(max) }
	}
	o, used := checkDeterminism(t, scenario{build: build(90), run: run(1000)}, 3)
	require.Equal(t, 2, used)
	require.Empty(t, o.err)
	require.Equal(t, uint64(91), o.cycle)

	o, _ = checkDeterminism(t, scenario{build: build(900), run: run(100)}, 2)
	require.Contains(t, o.err, chronon.ErrCycleLimit.Error())
	require.Equal(t, uint64(100), o.cycle)
}

func TestParallelRunsCanBeChained(t *testing.T) {
	// Several Run calls on one simulation equal one long run.
	sc := scenario{build: ring(4, nil), run: func(s *chronon.Simulation) error {
		for range 10 {
			if err := s.Run(37); err != nil {
				return err
			}
		}
		return nil
	}}
	o, _ := checkDeterminism(t, sc, 2)
	require.Equal(t, uint64(370), o.cycle)
}

func TestParallelFallsBackToSequential(t *testing.T) {
	t.Run("single cluster", func(t *testing.T) {
		s := chronon.New()
		a, b := &node{}, &node{}
		require.NoError(t, s.Add("a", a))
		require.NoError(t, s.Add("b", b))
		require.NoError(t, chronon.Connect(&a.Out[0], &b.In, chronon.Delay(0)))
		require.NoError(t, s.Build())
		require.NoError(t, s.SetWorkers(4))
		w, reason := s.Engine()
		require.Equal(t, 1, w)
		require.Contains(t, reason, "single cluster")
	})
	t.Run("unlimited capacity and rate", func(t *testing.T) {
		s := chronon.New()
		a, b := &node{}, &node{}
		require.NoError(t, s.Add("a", a))
		require.NoError(t, s.Add("b", b))
		require.NoError(t, chronon.Connect(&a.Out[0], &b.In, chronon.Rate(chronon.Unlimited)))
		require.NoError(t, s.Build())
		require.NoError(t, s.SetWorkers(2))
		w, reason := s.Engine()
		require.Equal(t, 1, w)
		require.Contains(t, reason, "a.Out[0] -> b.In has unlimited capacity and rate")
	})
	t.Run("errors", func(t *testing.T) {
		s := chronon.New()
		require.ErrorIs(t, s.SetWorkers(2), chronon.ErrNotBuilt)
		s = ring(3, nil)(t)
		require.Error(t, s.SetWorkers(0))
		require.NoError(t, s.SetWorkers(1))
		w, reason := s.Engine()
		require.Equal(t, 1, w)
		require.Empty(t, reason)
	})
}

// flood sends four messages a cycle; idle never receives.
type flood struct {
	chronon.Base
	Out chronon.OutPort[uint64]
}

func (f *flood) Tick() {
	for range 4 {
		f.Out.Send(f.Cycle())
	}
}

type idle struct {
	In chronon.InPort[uint64]
}

func (idle) Tick() {}

func TestParallelOverflowIsReported(t *testing.T) {
	build := func(t *testing.T) *chronon.Simulation {
		s := chronon.New()
		f, k := &flood{}, &idle{}
		require.NoError(t, s.Add("f", f))
		require.NoError(t, s.Add("k", k))
		require.NoError(t, chronon.Connect(&f.Out, &k.In, chronon.Rate(4)))
		require.NoError(t, s.Build())
		return s
	}
	o, used := checkDeterminism(t, scenario{build: build, run: runFor(5000)}, 2)
	require.Equal(t, 2, used)
	require.Contains(t, o.err, "lane overflow on f.Out -> k.In at cycle 1024")
	s := build(t)
	s.SetParallelThreshold(0)
	require.NoError(t, s.SetWorkers(2))
	require.True(t, errors.Is(s.Run(5000), chronon.ErrOverflow))
}

func TestOverflowDoesNotDependOnTickOrder(t *testing.T) {
	// Regression (found with the stress harness's reverse-order check): a
	// producer sending 2 a cycle on an unlimited edge to a consumer taking
	// 1. The lane used to overflow when physically full, which counted the
	// consumer's pops of the current cycle when it ticked first: cycle 4095
	// consumer first, 4094 producer first, and either under 2 workers. The
	// backlog is now counted like admission, from pops of earlier cycles.
	var want string
	for _, consFirst := range []bool{false, true} {
		for _, w := range []int{1, 2} {
			for range 3 {
				p := &prod{plan: func(uint64) []int { return []int{1, 2} }}
				k := &cons{take: func(uint64) int { return 1 }}
				s := pair(t, consFirst, p, k, chronon.Rate(2))
				s.SetParallelThreshold(0)
				require.NoError(t, s.SetWorkers(w))
				err := s.Run(10000)
				require.ErrorIs(t, err, chronon.ErrOverflow)
				if want == "" {
					want = err.Error()
				}
				require.Equal(t, want, err.Error(), "consumer first %v, %d workers", consFirst, w)
				require.Len(t, p.sent, 8190, "consumer first %v, %d workers", consFirst, w)
			}
		}
	}
	require.Contains(t, want, "at cycle 4094")
}

func TestParallelCalibration(t *testing.T) {
	t.Run("cheap cycles stay sequential", func(t *testing.T) {
		s := ring(4, nil)(t)
		s.SetParallelThreshold(time.Hour) // every cycle is cheaper, also under the race detector
		require.NoError(t, s.SetWorkers(2))
		require.NoError(t, s.Run(3000))
		w, reason := s.Engine()
		require.Equal(t, 1, w)
		require.Contains(t, reason, "parallel threshold")
	})
	t.Run("expensive cycles calibrate briefly", func(t *testing.T) {
		// Ticks of 100 us: 8 slices of one cycle and a profile of at least
		// 16 cycles and about 2 ms; a slower host only means fewer cycles.
		s := chronon.New()
		require.NoError(t, s.Add("a", &busy{d: 50 * time.Microsecond}))
		require.NoError(t, s.Add("b", &busy{d: 50 * time.Microsecond}))
		require.NoError(t, s.Build())
		require.NoError(t, s.SetWorkers(2))
		require.NoError(t, s.Run(1100))
		n := chronon.CalibrationCycles(s)
		require.GreaterOrEqual(t, n, uint64(8+16))
		require.LessOrEqual(t, n, uint64(8+24), "a 100 us cycle calibrates over a few dozen cycles")
	})
	t.Run("profiled repartition is deterministic", func(t *testing.T) {
		build := ring(7, nil)
		want := scenario{build: build, run: runFor(3000)}.outcome(t, 1)
		for _, w := range harnessWorkers {
			s := build(t)
			s.SetParallelThreshold(time.Nanosecond) // calibrate, profile, repartition, run parallel
			require.NoError(t, s.SetWorkers(w))
			require.NoError(t, s.Run(3000))
			used, reason := s.Engine()
			require.Empty(t, reason)
			require.Equal(t, min(w, 7), used)
			got := outcome{cycle: s.Cycle(), events: map[string][]event{}}
			for _, name := range s.Units() {
				u, _ := s.Unit(name)
				got.events[name] = u.(recorder).Events()
			}
			require.Empty(t, firstDivergence(want, got), "%d workers", w)
		}
	})
}

func TestParallelAdaptiveSwitchingIsDeterministic(t *testing.T) {
	// A cheap model forced past the threshold runs slower in parallel than
	// sequentially, so the adaptive loop alternates engines every few
	// segments of 16 cycles; the events must not change.
	build := ring(6, nil)
	want := scenario{build: build, run: runFor(4000)}.outcome(t, 1)
	for _, w := range []int{2, 3, 8} {
		s := build(t)
		s.SetParallelThreshold(time.Nanosecond)
		chronon.SetSegmentCycles(s, 16)
		require.NoError(t, s.SetWorkers(w))
		require.NoError(t, s.Run(4000))
		got := outcome{cycle: s.Cycle(), events: map[string][]event{}}
		for _, name := range s.Units() {
			u, _ := s.Unit(name)
			got.events[name] = u.(recorder).Events()
		}
		require.Empty(t, firstDivergence(want, got), "%d workers", w)
		t.Logf("%d workers: %d of about %d segments sequential", w, chronon.SequentialSegments(s), (4000-1280)/16)
	}
}

// TestLookaheadStopLatency: with a lookahead L, a termination or overflow
// in cycle c ends the run at the end of c+L-1 in every engine, and a panic
// at once; both parallel engines (L = 1 and beyond) give the sequential
// engine's events.
func TestLookaheadStopLatency(t *testing.T) {
	for _, la := range []int{1, 2, 5} {
		t.Run(fmt.Sprintf("lookahead=%d", la), func(t *testing.T) {
			term := scenario{
				build: ring(5, func(i int, nd *node) {
					if i == 1 || i == 3 {
						nd.termAt = 123
					}
				}, chronon.WithMaxLookahead(la)),
				run: func(s *chronon.Simulation) error {
					_, err := s.RunUntilTermination(10_000)
					return err
				},
			}
			o, _ := checkDeterminism(t, term, 2)
			require.Equal(t, "n1", o.term.Unit)
			require.Equal(t, uint64(123), o.term.Cycle)
			require.Equal(t, uint64(123+la), o.cycle)

			// A panic within the latency of an earlier termination: both
			// stand, the run ends at the panic.
			pan := scenario{
				build: ring(5, func(i int, nd *node) {
					switch i {
					case 1:
						nd.termAt = 60
					case 3:
						nd.panAt = 60 + uint64(la) - 1
					}
				}, chronon.WithMaxLookahead(la)),
				run: runFor(1000),
			}
			o, _ = checkDeterminism(t, pan, 2)
			require.True(t, o.hasTrm)
			require.Contains(t, o.err, fmt.Sprintf(`"n3" panicked at cycle %d`, 60+la-1))
			require.Equal(t, uint64(60+la-1), o.cycle)
		})
	}
}

// slowNode is a harness node whose Tick takes a few milliseconds every
// period cycles, as a worker the host deschedules would.
type slowNode struct {
	node
	period uint64
}

func (n *slowNode) Tick() {
	if c := n.Cycle(); c%n.period == n.period/2 {
		time.Sleep(3 * time.Millisecond)
	}
	n.node.Tick()
}

func TestParallelLateWorkerIsCovered(t *testing.T) {
	// The first unit of each worker's list is slow now and then. The other
	// worker then takes what is left of the slow one's list (after its
	// wait of stealPolls polls), and the results stay the sequential ones.
	build := func(t *testing.T) *chronon.Simulation {
		s := chronon.New()
		nodes := make([]*slowNode, 6)
		for i := range nodes {
			nodes[i] = &slowNode{node: node{seed: uint64(i) + 1, sendP: 128}, period: 1 << 20}
			if i < 2 {
				nodes[i].period = 40
			}
			require.NoError(t, s.Add(fmt.Sprintf("n%d", i), nodes[i]))
		}
		for i, nd := range nodes {
			require.NoError(t, chronon.Connect(&nd.Out[0], &nodes[(i+1)%6].In, chronon.Capacity(2)))
			require.NoError(t, chronon.Connect(&nd.Out[1], &nodes[(i+5)%6].In, chronon.Delay(3), chronon.Rate(2)))
		}
		require.NoError(t, s.Build())
		return s
	}
	sc := scenario{build: build, run: runFor(400)}
	want := sc.outcome(t, 1)
	s := build(t)
	s.SetParallelThreshold(0)
	require.NoError(t, s.SetWorkers(2))
	require.NoError(t, s.Run(400))
	ran, stolen, ok := chronon.BarrierStats(s)
	require.True(t, ok)
	require.Equal(t, uint64(400*6), ran)
	require.NotZero(t, stolen, "no cluster of a late worker was taken over")
	require.Empty(t, firstDivergence(want, sc.outcome(t, 2)))
}

// busy spins for d in every Tick: a unit of an expensive model.
type busy struct {
	chronon.Base
	d time.Duration
}

func (b *busy) Tick() {
	for t0 := time.Now(); time.Since(t0) < b.d; {
	}
}

// TestLookaheadTrailingCut: a ring of 12 units, and a ring of 4 that it
// feeds by a delay-1 edge and that feeds it back by a delay-6 edge. No cut
// has long edges both ways, so the lookahead engine puts the 4 on a worker
// that trails the other (trailCut): the leader depends on it with lag 6,
// it on the leader with lag 1. The states match the sequential engine's
// with 2, 3 and 8 workers.
func TestLookaheadTrailingCut(t *testing.T) {
	n := uint64(3000)
	if raceEnabled {
		n = 600
	}
	build := func() *chronon.Simulation {
		s := chronon.New(chronon.WithMaxLookahead(8))
		us := make([]*worker64, 16)
		for i := range us {
			us[i] = &worker64{state: uint64(i) + 1, work: 10}
			require.NoError(t, s.Add(fmt.Sprintf("u%d", i), us[i]))
		}
		link := func(from, to, delay int) {
			require.NoError(t, chronon.Connect(&us[from].OutS, &us[to].InS, chronon.Delay(delay), chronon.Capacity(8)))
		}
		for i := range 12 {
			link(i, (i+1)%12, 1)
		}
		for i := range 4 {
			link(12+i, 12+(i+1)%4, 1)
		}
		link(5, 12, 1)
		link(14, 0, 6)
		require.NoError(t, s.Build())
		return s
	}
	requireLookaheadStates(t, build, n, []uint64{6, 1})
}

// requireLookaheadStates runs build's simulation for n cycles with 1, 2, 3
// and 8 workers, every run forced parallel: with more than one worker the
// lookahead engine runs it with the given lags, and the units' states
// match the sequential engine's.
func requireLookaheadStates(t *testing.T, build func() *chronon.Simulation, n uint64, lags []uint64) {
	t.Helper()
	state := func(w int) []uint64 {
		s := build()
		s.SetParallelThreshold(0)
		require.NoError(t, s.SetWorkers(w))
		require.NoError(t, s.Run(n))
		if w > 1 {
			require.Equal(t, lags, chronon.LookaheadLags(s))
			cycles, syncs, _, ok := chronon.LookaheadStats(s)
			require.True(t, ok)
			require.Equal(t, 2*n, cycles)
			t.Logf("%d workers: %.3f syncs per worker and cycle", w, float64(syncs)/float64(cycles))
		}
		return worker64States(s)
	}
	want := state(1)
	for _, w := range []int{2, 3, 8} {
		require.Equal(t, want, state(w), "%d workers", w)
	}
}
