package chronon_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// dozer records the cycles it ticks in, receives what is ready, and
// sleeps as its plan says: until the cycle plan returns (0: no timer),
// and until a message arrives if recv.
type dozer struct {
	chronon.Base
	In    chronon.InPort[int]
	plan  func(c uint64) (until uint64, recv bool)
	one   bool // receives at most one message a tick
	ticks []uint64
	got   []string
}

func (*dozer) MaySleep() {}

func (d *dozer) Tick() {
	c := d.Cycle()
	d.ticks = append(d.ticks, c)
	for {
		v, ok := d.In.TryReceive()
		if !ok {
			break
		}
		d.got = append(d.got, fmt.Sprintf("%d@%d", v, c))
		if d.one {
			break
		}
	}
	until, recv := d.plan(c)
	if until != 0 {
		d.SleepUntil(until)
	}
	if recv {
		d.SleepUntilReceive()
	}
}

// pulser sends its cycle in the cycles listed.
type pulser struct {
	chronon.Base
	Out chronon.OutPort[int]
	at  map[uint64]bool
	n   int // messages per listed cycle; 0: one
}

func (p *pulser) Tick() {
	if p.at[p.Cycle()] {
		for range max(p.n, 1) {
			p.Out.Send(int(p.Cycle()))
		}
	}
}

// dozeModel is a pulser sending at the cycles in at, over an edge of delay
// d, to a dozer with plan and clock k.
func dozeModel(t *testing.T, at []uint64, d int, plan func(uint64) (uint64, bool), k chronon.Clock) (*chronon.Simulation, *dozer) {
	s := chronon.New()
	p := &pulser{at: map[uint64]bool{}}
	for _, c := range at {
		p.at[c] = true
	}
	z := &dozer{plan: plan}
	require.NoError(t, s.Add("p", p))
	require.NoError(t, s.Add("z", z))
	require.NoError(t, chronon.Connect(&p.Out, &z.In, chronon.Delay(d), chronon.Rate(2)))
	require.NoError(t, s.SetClock("z", k))
	require.NoError(t, s.Build())
	return s, z
}

func TestSleeping(t *testing.T) {
	every := func(n uint64) func(uint64) (uint64, bool) {
		return func(c uint64) (uint64, bool) { return c + n, false }
	}
	recv := func(uint64) (uint64, bool) { return 0, true }
	both := func(n uint64) func(uint64) (uint64, bool) {
		return func(c uint64) (uint64, bool) { return c + n, true }
	}
	for _, tc := range []struct {
		name  string
		at    []uint64
		delay int
		plan  func(uint64) (uint64, bool)
		clock chronon.Clock
		ticks []uint64
		got   []string
	}{
		{"until a cycle", nil, 1, every(5), chronon.Clock{}, []uint64{0, 5, 10, 15, 20}, nil},
		{"until now is no sleep", nil, 1, every(0), chronon.Clock{}, []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}, nil},
		{"until a message", []uint64{3, 10}, 2, recv, chronon.Clock{}, []uint64{0, 5, 12}, []string{"3@5", "10@12"}},
		{"woken in the same cycle over a zero delay", []uint64{3, 10}, 0, recv, chronon.Clock{}, []uint64{0, 3, 10}, []string{"3@3", "10@10"}},
		{"a message already ready wakes at once", []uint64{0}, 0, nil, chronon.Clock{}, []uint64{0, 1}, []string{"0@0", "0@1"}},
		{"whichever first", []uint64{7}, 1, both(4), chronon.Clock{}, []uint64{0, 4, 8, 12, 16, 20}, []string{"7@8"}},
		{"a message before the timer", []uint64{2}, 1, both(6), chronon.Clock{}, []uint64{0, 3, 9, 15, 21}, []string{"2@3"}},
		{"a clock", nil, 1, every(0), chronon.Clock{Period: 3, Phase: 1}, []uint64{1, 4, 7, 10, 13, 16, 19}, nil},
		{"a clock rounds a timer up", nil, 1, every(5), chronon.Clock{Period: 3}, []uint64{0, 6, 12, 18}, nil},
		{"a clock rounds an arrival up", []uint64{3}, 2, recv, chronon.Clock{Period: 4, Phase: 2}, []uint64{2, 6}, []string{"3@6"}},
	} {
		for _, w := range []int{1, 2, 4} {
			plan := tc.plan
			if plan == nil { // two messages in cycle 0, received one a tick
				plan = recv
			}
			s, z := dozeModel(t, tc.at, tc.delay, plan, tc.clock)
			if tc.plan == nil {
				z.one = true
				pulse, _ := s.Unit("p")
				pulse.(*pulser).n = 2
			}
			s.SetParallelThreshold(0)
			require.NoError(t, s.SetWorkers(w))
			require.NoError(t, s.Run(22), tc.name)
			assert.Equal(t, uint64(22), s.Cycle(), "%s, %d workers", tc.name, w)
			assert.Equal(t, tc.ticks, z.ticks, "%s, %d workers: ticks", tc.name, w)
			assert.Equal(t, tc.got, z.got, "%s, %d workers: received", tc.name, w)
		}
	}
}

// TestSleepingRunUntilDone: RunUntilDone asks the Doners before each cycle
// also when cycles are skipped, and stops at the cycle limit when every
// unit sleeps for good.
func TestSleepingRunUntilDone(t *testing.T) {
	for _, w := range []int{1, 2} {
		s := chronon.New()
		p := &pulser{at: map[uint64]bool{40: true}}
		z := &doneAfter{dozer{plan: func(uint64) (uint64, bool) { return 0, true }}}
		require.NoError(t, s.Add("p", p))
		require.NoError(t, s.Add("z", z))
		require.NoError(t, chronon.Connect(&p.Out, &z.In, chronon.Delay(3)))
		require.NoError(t, s.Build())
		s.SetParallelThreshold(0)
		require.NoError(t, s.SetWorkers(w))
		require.NoError(t, s.RunUntilDone(1000), "%d workers", w)
		assert.Equal(t, uint64(44), s.Cycle(), "%d workers: done after the tick of cycle 43", w)
		assert.Equal(t, []uint64{0, 43}, z.ticks)
		require.ErrorIs(t, s.RunUntilDone(0), nil, "done: no cycle to run")
		z.got = nil
		require.ErrorIs(t, s.RunUntilDone(500), chronon.ErrCycleLimit, "%d workers: every unit asleep for good", w)
		assert.Equal(t, uint64(544), s.Cycle())
	}
}

// doneAfter is a dozer that is done once it received something.
type doneAfter struct{ dozer }

func (d *doneAfter) Done() bool { return len(d.got) > 0 }

func TestSleepingErrors(t *testing.T) {
	// A unit that is not a Sleeper.
	s := chronon.New()
	require.NoError(t, s.Add("w", &insomniac{}))
	require.NoError(t, s.Add("z", &dozer{plan: func(uint64) (uint64, bool) { return 3, false }}))
	require.NoError(t, s.Build())
	err := s.Run(10)
	require.ErrorIs(t, err, chronon.ErrUnitPanic)
	require.ErrorContains(t, err, "unit w sleeps but does not implement chronon.Sleeper")

	s = chronon.New()
	require.NoError(t, s.Add("z", &dozer{}))
	require.ErrorContains(t, s.SetClock("nosuch", chronon.Clock{Period: 2}), `no unit "nosuch"`)
	require.ErrorContains(t, s.SetClock("z", chronon.Clock{Period: 2, Phase: 2}), `unit "z": clock period 2, phase 2: want period >= 1 and phase < period`)
	require.ErrorContains(t, s.SetClock("z", chronon.Clock{Phase: 1}), "want period >= 1")
	require.ErrorIs(t, s.SetClock("z", chronon.Clock{Period: 2}), nil)
}

// insomniac sleeps without being a Sleeper.
type insomniac struct{ chronon.Base }

func (u *insomniac) Tick() { u.SleepUntil(u.Cycle() + 2) }

func TestSleepingYAML(t *testing.T) {
	reg := chronon.NewRegistry()
	var z *dozer
	chronon.Register(reg, "dozer", func(string, struct{}) (chronon.Unit, error) {
		z = &dozer{plan: func(uint64) (uint64, bool) { return 0, false }}
		return z, nil
	})
	src := "units:\n  - {name: z, type: dozer, clock: {period: 4, phase: 3}}\n"
	s, cfg, err := chronon.Parse("t.yaml", []byte(src), reg)
	require.NoError(t, err)
	require.NoError(t, s.Run(12))
	assert.Equal(t, []uint64{3, 7, 11}, z.ticks)
	out, err := cfg.Effective.YAML(cfg)
	require.NoError(t, err)
	assert.Contains(t, string(out), "clock: {period: 4, phase: 3}")

	for bad, want := range map[string]string{
		"units:\n  - {name: z, type: dozer, clock: {period: 2, phase: 5}}\n": "t.yaml:2: clock period 2, phase 5: want period >= 1 and phase < period",
		"units:\n  - {name: z, type: dozer, clock: {every: 2}}\n":            `t.yaml:2: unknown clock key "every" (want period, phase)`,
		"units:\n  - {name: z, type: dozer, clock: {period: -1}}\n":          `t.yaml:2: clock period: want a non-negative integer, not "-1"`,
		"units:\n  - {name: z, type: dozer, clock: 3}\n":                     "t.yaml:2: clock must be a mapping with period and phase",
	} {
		_, _, err := chronon.Parse("t.yaml", []byte(bad), reg)
		require.ErrorIs(t, err, chronon.ErrTopology, bad)
		assert.EqualError(t, err, want, bad)
	}
}

// TestSleepingObservation: counters and trace of napping topologies are
// byte-identical sequentially, in every chain of runs, and to those of the
// self-checking units.
func TestSleepingObservation(t *testing.T) {
	seeds := 6
	if raceEnabled {
		seeds = 2
	}
	for i := range seeds {
		seed := uint64(i)*37 + 9100
		sp := newNapSpec(seed, napAPI)
		every := 1 + mix(seed)%50
		wantCSV, wantTrace, wantErr := newNapSpec(seed, napSelf).observed(t, []stressStep{{workers: 1, cycles: 2 * stressCycles}}, every)
		for _, ch := range append([][]stressStep{{{workers: 1, cycles: 2 * stressCycles}}}, stressChains(seed)...) {
			last := &ch[len(ch)-1]
			last.cycles = 2*stressCycles - (total(ch) - last.cycles)
			gotCSV, gotTrace, gotErr := sp.observed(t, ch, every)
			require.Equal(t, wantErr, gotErr, "seed %d chain %+v", seed, ch)
			require.Equal(t, wantCSV, gotCSV, "seed %d chain %+v: counters", seed, ch)
			require.Equal(t, wantTrace, gotTrace, "seed %d chain %+v: trace", seed, ch)
		}
	}
}

// TestSleepingZeroAllocs: once its lists have grown, the sleeping
// scheduler allocates nothing per cycle.
func TestSleepingZeroAllocs(t *testing.T) {
	s, _ := tokenModel(t, 1000, false)
	require.NoError(t, s.Run(2000))
	allocs := testing.AllocsPerRun(20, func() { _ = s.Run(1000) })
	assert.Zero(t, allocs, "allocations per 1000 cycles")
}

// TestSleepingWideFanIn: a sleeping unit behind a fan-in of 40
// connections (frontier's heap mode) wakes at each arrival.
func TestSleepingWideFanIn(t *testing.T) {
	for _, w := range []int{1, 2, 3} {
		s := chronon.New()
		z := &dozer{plan: func(uint64) (uint64, bool) { return 0, true }}
		require.NoError(t, s.Add("z", z))
		want := []uint64{0}
		for i := range 40 {
			p := &pulser{at: map[uint64]bool{uint64(5 * i): true}}
			require.NoError(t, s.Add(fmt.Sprint("p", i), p))
			require.NoError(t, chronon.Connect(&p.Out, &z.In, chronon.Delay(1+i%3), chronon.Capacity(2)))
			want = append(want, uint64(5*i+1+i%3))
		}
		require.NoError(t, s.Build())
		s.SetParallelThreshold(0)
		require.NoError(t, s.SetWorkers(w))
		require.NoError(t, s.Run(300))
		assert.Equal(t, want, z.ticks, "%d workers", w)
		assert.Len(t, z.got, 40)
	}
}
