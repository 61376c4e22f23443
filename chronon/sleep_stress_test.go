package chronon_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// Sleeping units in the stress harness. A napping topology is a stress
// topology whose units, after some ticks, sleep until a cycle, until a
// message arrives, or both, and some of which tick on a slower clock. Built
// with napAPI they ask the scheduler (SleepUntil, SleepUntilReceive,
// SetClock); built with napSelf the same units tick every cycle and check
// for themselves, the model the scheduler must reproduce exactly.

type napMode int

const (
	napOff  napMode = iota // plain snodes
	napAPI                 // the sleeping scheduler
	napSelf                // every unit ticks every cycle and checks for itself
)

// napSpec is one unit's sleeping: sleepP in 1/256 per tick; a clock.
type napSpec struct {
	sleepP        uint64
	period, phase uint64
}

// napNode is an snode that sleeps.
type napNode struct {
	snode
	spec napSpec
	self bool
	// the self-checking state
	asleep bool
	wakeAt uint64 // none: only an arrival wakes it
	recv   bool
}

// napper is a napNode that uses the scheduler.
type napper struct{ napNode }

func (*napper) MaySleep() {}

func (n *napNode) Tick() {
	c := n.Cycle()
	if n.self {
		if p := n.spec.period; p > 1 && c%p != n.spec.phase {
			return
		}
		if n.asleep {
			if c < n.wakeAt && (!n.recv || !n.In.Ready()) {
				return
			}
			n.asleep = false
		}
	}
	n.snode.Tick()
	r := n.rnd()
	if r%256 >= n.spec.sleepP {
		return
	}
	until, recv := uint64(0), false
	switch r >> 8 % 4 {
	case 0:
		until = c + r>>16%24 // 0 and 1 ask for nothing
	case 1, 2:
		recv = true
	case 3:
		until, recv = c+2+r>>16%40, true
	}
	n.log('z', until<<1|b2u(recv))
	if until == 0 && !recv {
		return // SleepUntil(0) is no request
	}
	if n.self {
		n.asleep, n.wakeAt, n.recv = true, until, recv
		if until == 0 {
			n.wakeAt = ^uint64(0)
		}
		return
	}
	if until != 0 {
		n.SleepUntil(until)
	}
	if recv {
		n.SleepUntilReceive()
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// node returns the snode to configure for u and the unit to add.
func (sp stressSpec) node(u stressUnit) (*snode, chronon.Unit) {
	switch sp.nap {
	case napAPI:
		n := &napper{napNode{spec: u.nap}}
		return &n.snode, n
	case napSelf:
		n := &napNode{spec: u.nap, self: true}
		return &n.snode, n
	}
	n := &snode{}
	return n, n
}

func (sp stressSpec) setClock(s *chronon.Simulation, i int) error {
	if u := sp.units[i]; sp.nap == napAPI && u.nap.period > 1 {
		return s.SetClock(fmt.Sprintf("u%d", i), chronon.Clock{Period: u.nap.period, Phase: u.nap.phase})
	}
	return nil
}

// newNapSpec is the stress topology of seed with sleeping units: most
// units sleep now and then, a third of them sleeping often, and about one
// in four ticks every 2 to 5 cycles.
func newNapSpec(seed uint64, mode napMode) stressSpec {
	sp := newStressSpec(seed)
	sp.nap = mode
	r := seed ^ 0x51ee9
	next := func(n uint64) uint64 { r = mix(r); return r % n }
	for i := range sp.units {
		u := &sp.units[i].nap
		switch next(3) {
		case 0:
			u.sleepP = 128 + next(128)
		case 1:
			u.sleepP = 8 + next(64)
		}
		if next(4) == 0 {
			u.period = 2 + next(4)
			u.phase = next(u.period)
		}
	}
	return sp
}

// TestSleepingEquivalence (and TestSleepingDifferential: both take the
// stress harness's -chronon.stress.seeds and -chronon.stress.first for a
// soak): on random topologies, the sleeping scheduler
// gives exactly the events, final cycle, termination and error of the same
// units ticking every cycle and checking for themselves.
func TestSleepingEquivalence(t *testing.T) {
	seeds := 60
	if raceEnabled {
		seeds = 15
	}
	if testing.Short() {
		seeds = 8
	}
	if *stressSeeds > 0 {
		seeds = *stressSeeds
	}
	slept, woke := 0, 0
	for i := range seeds {
		seed := *stressFirst + uint64(i) + 7000
		run := func(mode napMode, cycles uint64) outcome {
			o, err := newNapSpec(seed, mode).run(nil, false, []stressStep{{workers: 1, cycles: cycles}})
			require.NoError(t, err)
			return o
		}
		for _, cycles := range []uint64{stressCycles, 1500} {
			want, got := run(napSelf, cycles), run(napAPI, cycles)
			if d := firstDivergence(want, got); d != "" {
				t.Fatalf("seed %d, %d cycles, sleeping against self-checking: %s", seed, cycles, d)
			}
			for _, ev := range want.events {
				for i, e := range ev {
					if e.Kind == 'z' {
						slept++
						if e.V&1 == 1 && i+1 < len(ev) && ev[i+1].Kind == 'r' {
							woke++
						}
					}
				}
			}
		}
	}
	require.Positive(t, slept)
	require.Positive(t, woke, "some units woke to a message")
	t.Logf("%d topologies: %d sleeps, %d followed by a receive", seeds, slept, woke)
}

// TestSleepingDifferential is the stress harness on napping topologies:
// sequential, with the units added in reverse order, and with 1 to 8
// workers and chains of runs, all identical.
func TestSleepingDifferential(t *testing.T) {
	seeds := 16
	if raceEnabled {
		seeds = 5
	}
	if testing.Short() {
		seeds = 3
	}
	if *stressSeeds > 0 {
		seeds = *stressSeeds
	}
	par := max(2, runtime.GOMAXPROCS(0))
	runs := 0
	for i := range seeds {
		seed := *stressFirst + uint64(i) + 9000
		n, d := stressSpecSeed(newNapSpec(seed, napAPI), seed, 1, par)
		runs += n
		if d != "" {
			t.Fatal(d)
		}
	}
	t.Logf("%d napping topologies, %d runs", seeds, runs)
}

// TestSleepingCrossWorkerWakes: in the parallel engine, sleeping units are
// woken by messages from clusters placed on other workers.
func TestSleepingCrossWorkerWakes(t *testing.T) {
	var crossed uint64
	for seed := uint64(9000); seed < 9008; seed++ {
		s, err := newNapSpec(seed, napAPI).build(nil, true)
		require.NoError(t, err)
		s.SetParallelThreshold(0)
		require.NoError(t, s.SetWorkers(4))
		if w, _ := s.Engine(); w < 2 {
			continue
		}
		_ = s.Run(stressCycles)
		_, c := chronon.SleepWakes(s)
		crossed += c
	}
	require.Positive(t, crossed)
}

// TestSleepingLookaheadLockstep: with a lookahead beyond 1, a model with
// sleeping units runs on the lockstep engine, not the lookahead engine,
// and gives the sequential results (stops L-1 cycles late included).
func TestSleepingLookaheadLockstep(t *testing.T) {
	par := 0
	for seed := uint64(9100); seed < 9106; seed++ {
		sp := newNapSpec(seed, napAPI)
		sp.lookahead = 4
		want, err := sp.run(nil, false, []stressStep{{workers: 1, cycles: stressCycles}})
		require.NoError(t, err)
		s, err := sp.build(nil, false)
		require.NoError(t, err)
		s.SetParallelThreshold(0)
		require.NoError(t, s.SetWorkers(4))
		if w, _ := s.Engine(); w >= 2 {
			par++
		}
		got := stressOutcome(s, s.Run(stressCycles))
		_, _, _, la := chronon.LookaheadStats(s)
		require.False(t, la, "seed %d: a sleeping model on the lookahead engine", seed)
		if d := firstDivergence(want, got); d != "" {
			t.Fatalf("seed %d, lookahead 4, 4 workers against sequential: %s", seed, d)
		}
	}
	require.Positive(t, par, "some runs must be parallel")
}
