package pressure

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var strategies = []WaitStrategy{LowLatency, Balanced, LowCPU}

func TestParseWaitStrategy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want WaitStrategy
	}{
		{"low-latency", LowLatency},
		{"balanced", Balanced},
		{"low-cpu", LowCPU},
	} {
		got, err := ParseWaitStrategy(tc.in)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
		assert.Equal(t, tc.in, got.String())

		text, err := got.MarshalText()
		require.NoError(t, err)
		var back WaitStrategy
		require.NoError(t, back.UnmarshalText(text))
		assert.Equal(t, got, back)
	}
	var zero WaitStrategy
	assert.Equal(t, Balanced, zero)

	for _, bad := range []string{"", "Balanced", "fast", "low_cpu"} {
		_, err := ParseWaitStrategy(bad)
		require.Error(t, err)
		assert.True(t, errors.Is(err, ErrUnknownStrategy))
		for _, name := range []string{"low-latency", "balanced", "low-cpu"} {
			assert.Contains(t, err.Error(), name)
		}
		w := LowCPU
		require.ErrorIs(t, w.UnmarshalText([]byte(bad)), ErrUnknownStrategy)
		assert.Equal(t, LowCPU, w, "failed UnmarshalText must not change the value")
	}
	_, err := WaitStrategy(9).MarshalText()
	require.ErrorIs(t, err, ErrUnknownStrategy)
	assert.Equal(t, "WaitStrategy(9)", WaitStrategy(9).String())
}

func TestLevelString(t *testing.T) {
	assert.Equal(t, "idle", Idle.String())
	assert.Equal(t, "low", Low.String())
	assert.Equal(t, "high", High.String())
	assert.Equal(t, "Level(7)", Level(7).String())
}

// fakeClock drives the streak clock of a Manager in tests.
type fakeClock struct{ t atomic.Int64 }

func (c *fakeClock) now() int64              { return c.t.Load() }
func (c *fakeClock) advance(d time.Duration) { c.t.Add(int64(d)) }

func newFake(s WaitStrategy) (*Manager, *fakeClock) {
	m := New(s)
	c := &fakeClock{}
	m.clock = c.now
	return m, c
}

func TestWorkGoesToHigh(t *testing.T) {
	for _, s := range strategies {
		for _, from := range []Level{Idle, Low, High} {
			for _, via := range []string{"OnWork", "Wake"} {
				t.Run(s.String()+"/"+from.String()+"/"+via, func(t *testing.T) {
					m := New(s)
					a, err := m.Register("a")
					require.NoError(t, err)
					b, err := m.Register("b")
					require.NoError(t, err)
					m.state.Store(uint32(from))
					if via == "OnWork" {
						a.OnWork()
					} else {
						m.Wake()
					}
					assert.Equal(t, High, m.Level())
					// Leaving Idle hands every stage a wake token; other
					// raises need none, as nobody parks above Idle.
					want := 0
					if from == Idle {
						want = 1
					}
					assert.Len(t, b.wake, want)
					assert.Len(t, a.wake, want)
				})
			}
		}
	}
}

// TestEmptyStreakLeadsDown drives one stage's empty streak with a fake clock
// (one microsecond per poll) and records when the level falls and when the
// stage parks. LowLatency never parks, and its streak clock takes the level
// down to Idle; the parking strategies park once the spin phase and the hold
// budget are over, and the stage, the last to park, takes the level to Idle.
func TestEmptyStreakLeadsDown(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2 for the spin phase")
	}
	type result struct{ low, idle, park time.Duration }
	const step = time.Microsecond
	const horizon = 30 * time.Millisecond
	results := map[WaitStrategy]result{}
	for _, s := range strategies {
		t.Run(s.String(), func(t *testing.T) {
			m, clk := newFake(s)
			st, err := m.Register("s")
			require.NoError(t, err)
			st.OnWork()
			require.Equal(t, High, m.Level())
			var r result
			for el := time.Duration(0); el < horizon && r.park == 0; el += step {
				st.unpark() // a token in hand: a park returns at once
				require.True(t, st.OnEmpty())
				clk.advance(step)
				switch lv := m.Level(); {
				case lv == Low && r.low == 0:
					r.low = el
				case lv == Idle && r.idle == 0:
					if r.low == 0 {
						r.low = el
					}
					r.idle = el
				}
				if m.Stats().Parks > 0 {
					r.park = el
				}
			}
			p := s.params()
			require.NotZero(t, r.low, "never fell to Low")
			require.NotZero(t, r.idle, "never fell to Idle")
			// The clock is read every 64 polls while spinning and every
			// tickMask+1 polls while yielding.
			slack := time.Duration(64+p.tickMask+1) * step
			if s == LowLatency {
				assert.GreaterOrEqual(t, r.low, p.highToLow)
				assert.LessOrEqual(t, r.low, p.highToLow+time.Duration(p.freeSpin+1)*step+slack)
				assert.GreaterOrEqual(t, r.idle, p.highToLow+p.lowToIdle)
				assert.LessOrEqual(t, r.idle, p.highToLow+p.lowToIdle+time.Duration(p.freeSpin+1)*step+slack)
				assert.Zero(t, r.park, "LowLatency must never park")
				assert.Zero(t, m.Stats().Parks)
				assert.NotZero(t, m.Stats().Yields, "after its spin phase, a LowLatency stage polls with Gosched")
			} else {
				require.NotZero(t, r.park, "never parked")
				// It parks after its spin phase and hold budget, or once its
				// streak clock takes the level to Idle, whichever is first.
				spun := time.Duration(p.freeSpin+p.spin) * step
				assert.GreaterOrEqual(t, r.park, min(spun+p.holdFor, p.highToLow+p.lowToIdle))
				assert.LessOrEqual(t, r.park, spun+p.holdFor+slack)
				// The park is the call after the announcement, which (as the
				// last stage's) takes the level to Idle, or the one after
				// that if the clock got there first.
				assert.Contains(t, []time.Duration{r.idle + step, r.idle + 2*step}, r.park)
				assert.Equal(t, uint64(1), m.Stats().Parks)
			}
			results[s] = r
		})
	}
	assert.Less(t, results[LowCPU].park, results[Balanced].park, "LowCPU parks soonest")
}

// TestShortGapsStayHigh: gaps shorter than the High->Low streak never lower
// the level, so bursts separated by short gaps cause no park/unpark churn.
func TestShortGapsStayHigh(t *testing.T) {
	for _, s := range []WaitStrategy{Balanced, LowCPU} {
		t.Run(s.String(), func(t *testing.T) {
			m, clk := newFake(s)
			st, err := m.Register("s")
			require.NoError(t, err)
			p := s.params()
			gap := p.highToLow * 8 / 10
			polls := int(gap / time.Microsecond)
			for range 200 {
				st.OnWork()
				for range polls {
					require.True(t, st.OnEmpty())
					clk.advance(time.Microsecond)
					require.Equal(t, High, m.Level())
				}
			}
			assert.Zero(t, m.Stats().Parks)
		})
	}
}

// TestBusyStageKeepsHigh: one stage always has work while another never
// does. The level is High after every OnWork, and the two trade at most one
// lowering per High->Low streak (no write storm). The idle stage never parks
// under LowLatency; under the parking strategies it parks once its spin phase
// and hold budget are over (it holds a token, so each park returns and a new
// streak starts), and the busy stage's work does not wake it.
func TestBusyStageKeepsHigh(t *testing.T) {
	for _, s := range strategies {
		t.Run(s.String(), func(t *testing.T) {
			m, clk := newFake(s)
			busy, err := m.Register("busy")
			require.NoError(t, err)
			idle, err := m.Register("idle")
			require.NoError(t, err)
			busy.OnWork()
			<-busy.wake // the tokens of leaving Idle
			<-idle.wake
			const horizon = 20 * time.Millisecond
			lowered := 0
			for el := time.Duration(0); el < horizon; el += time.Microsecond {
				busy.OnWork()
				require.Equal(t, High, m.Level())
				if idle.announced {
					assert.Len(t, idle.wake, 0, "OnWork of another stage woke a stage parked above Idle")
					idle.unpark()
				}
				require.True(t, idle.OnEmpty())
				if m.Level() != High {
					lowered++
				}
				clk.advance(time.Microsecond)
			}
			p := s.params()
			assert.LessOrEqual(t, lowered, int(horizon/p.highToLow)+1)
			parks := m.Stats().Parks
			if !p.park {
				assert.Zero(t, parks)
				return
			}
			streak := time.Duration(p.freeSpin+p.spin)*time.Microsecond + p.holdFor
			assert.NotZero(t, parks)
			assert.LessOrEqual(t, parks, uint64(horizon/streak)+1)
		})
	}
}

func TestCloseReleasesEveryone(t *testing.T) {
	for _, s := range strategies {
		t.Run(s.String(), func(t *testing.T) {
			m := New(s)
			const n = 4
			var parkedOrSpinning sync.WaitGroup
			var done sync.WaitGroup
			for i := range n {
				st, err := m.Register("s" + string(rune('0'+i)))
				require.NoError(t, err)
				parkedOrSpinning.Add(1)
				done.Add(1)
				go func() {
					defer done.Done()
					first := true
					for st.OnEmpty() {
						if first {
							parkedOrSpinning.Done()
							first = false
						}
					}
					if first {
						parkedOrSpinning.Done()
					}
				}()
			}
			parkedOrSpinning.Wait()
			m.Close()
			m.Close() // idempotent
			done.Wait()
			_, err := m.Register("late")
			require.ErrorIs(t, err, ErrClosed)
			assert.True(t, m.Stats().Closed)
			st := m.stages.Load()
			for _, s := range *st {
				assert.False(t, s.OnEmpty(), "every later OnEmpty returns false")
			}
			m.Wake() // harmless after Close
		})
	}
}

func TestSpinLimit(t *testing.T) {
	for _, tc := range []struct {
		procs, stages, parked, want int32
	}{
		{1, 1, 0, 0},
		{2, 1, 0, 1},
		{2, 2, 0, 1},
		{2, 3, 0, 0},
		{2, 4, 0, -1},
		{2, 4, 2, 1},
		{4, 4, 0, 3},
		{4, 6, 0, 1},
		{8, 4, 0, 7},
	} {
		m := New(Balanced)
		m.nstages.Store(tc.stages)
		m.parked.Store(tc.parked)
		assert.Equal(t, tc.want, m.spinLimit(tc.procs), "%+v", tc)
	}
}

// TestSpinSlotsBounded: however many stages want to spin, no more hold a
// spin slot than spinLimit allows.
func TestSpinSlotsBounded(t *testing.T) {
	t.Run("2 stages", func(t *testing.T) { testSpinSlotsBounded(t, 2) })
	t.Run("4 stages", func(t *testing.T) { testSpinSlotsBounded(t, 4) })
}

func testSpinSlotsBounded(t *testing.T, n int) {
	procs := runtime.GOMAXPROCS(0)
	m := New(LowLatency)
	var stop atomic.Bool
	var wg sync.WaitGroup
	// Register every stage before any runs: a stage that starts while the
	// others are still registering sees fewer stages and may take a slot.
	stages := make([]*Stage, n)
	for i := range stages {
		st, err := m.Register("spinner")
		require.NoError(t, err)
		stages[i] = st
	}
	for _, st := range stages {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.OnWork()
			for !stop.Load() && st.OnEmpty() {
			}
		}()
	}
	deadline := time.Now().Add(100 * time.Millisecond)
	maxSeen := 0
	for time.Now().Before(deadline) {
		maxSeen = max(maxSeen, m.Stats().Spinning)
		runtime.Gosched()
	}
	stop.Store(true)
	m.Close()
	wg.Wait()
	assert.LessOrEqual(t, maxSeen, max(procs-1-max(0, n-procs), 0))
	assert.NotZero(t, m.Stats().Yields, "stages beyond the spin slots yield")
	assert.Zero(t, m.Stats().Parks)
}

// TestNoStarvationOnOneP: on GOMAXPROCS=1 a spinning stage would hold the
// only P until preemption (10 ms) on every handoff; 5k handoffs finish in a
// fraction of that budget only if empty stages yield.
func TestNoStarvationOnOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, s := range strategies {
		t.Run(s.String(), func(t *testing.T) {
			m := New(s)
			const items = 5000
			start := time.Now()
			handoff(t, m, items, nil)
			assert.Less(t, time.Since(start), 5*time.Second)
			m.Close()
		})
	}
}

// TestParkWithoutSlot: with more stages than spin slots, a stage that finds
// nothing yields for its strategy's budget and then parks even though the
// level is High; Wake at High unparks it and no other stage. LowLatency never
// parks. The last stage to park takes the level to Idle.
func TestParkWithoutSlot(t *testing.T) {
	if runtime.GOMAXPROCS(0) != 2 {
		t.Skip("the slot arithmetic below assumes GOMAXPROCS=2")
	}
	for _, s := range strategies {
		t.Run(s.String(), func(t *testing.T) {
			m, clk := newFake(s)
			var st [3]*Stage
			for i := range st {
				var err error
				st[i], err = m.Register("s")
				require.NoError(t, err)
			}
			// Three active stages on two Ps: no spin slot (spinLimit 0).
			st[0].OnWork()
			require.Equal(t, High, m.Level())
			for _, x := range st {
				<-x.wake // the tokens of leaving Idle
			}
			idle := st[2]
			polls := 0
			for !idle.announced && polls < 10000 {
				require.True(t, idle.OnEmpty())
				clk.advance(time.Microsecond)
				polls++
			}
			if s == LowLatency {
				assert.False(t, idle.announced, "LowLatency never parks")
				assert.Zero(t, m.Stats().Parks)
				return
			}
			require.True(t, idle.announced, "never announced a park")
			assert.GreaterOrEqual(t, time.Duration(polls)*time.Microsecond, s.params().yieldFor)
			assert.Equal(t, High, m.Level(), "a park without a slot leaves the level alone")
			assert.Equal(t, int32(1), m.parked.Load())

			m.WakeIfParked()
			assert.Len(t, idle.wake, 1, "WakeIfParked unparks an announced stage")
			<-idle.wake
			m.Wake()
			assert.Len(t, idle.wake, 1, "Wake at High unparks an announced stage")
			assert.Len(t, st[0].wake, 0)
			assert.Len(t, st[1].wake, 0)
			require.True(t, idle.OnEmpty()) // parks, and returns with the token
			assert.Equal(t, uint64(1), m.Stats().Parks)
			assert.Zero(t, m.parked.Load())

			// Stage.Wake unparks its own stage only; OnWork unparks nobody
			// parked above Idle.
			for _, x := range st[1:] {
				for !x.announced {
					require.True(t, x.OnEmpty())
					clk.advance(time.Microsecond)
				}
			}
			// Once one stage parks, another gets the freed spin slot and its
			// streak clock may lower the level; this part is about High.
			m.state.Store(m.state.Load()&^levelMask | uint32(High))
			st[0].OnWork()
			assert.Len(t, st[1].wake, 0, "OnWork does not unpark above Idle")
			assert.Len(t, st[2].wake, 0)
			st[1].Wake()
			assert.Len(t, st[1].wake, 1)
			assert.Len(t, st[2].wake, 0, "Stage.Wake unparks only its stage")
			st[2].Prewake()
			assert.Len(t, st[2].wake, 1, "Prewake unparks its stage as Wake does")
			assert.Len(t, st[1].wake, 1)
			for _, x := range st[1:] {
				x.unpark()
				require.True(t, x.OnEmpty()) // parks, returns with the token
			}

			// Work withdraws an announcement.
			for !idle.announced {
				require.True(t, idle.OnEmpty())
				clk.advance(time.Microsecond)
			}
			idle.OnWork()
			assert.False(t, idle.parking.Load())
			assert.Zero(t, m.parked.Load())
			m.state.Store(m.state.Load()&^levelMask | uint32(Low))
			tokens := len(st[0].wake) + len(st[1].wake) + len(st[2].wake)
			m.WakeIfParked()
			assert.Equal(t, Low, m.Level(), "WakeIfParked without a park announced changes nothing")
			assert.Equal(t, tokens, len(st[0].wake)+len(st[1].wake)+len(st[2].wake))

			// Every stage announcing means nobody has work: Idle.
			for _, x := range st {
				for !x.announced {
					require.True(t, x.OnEmpty())
					clk.advance(time.Microsecond)
				}
			}
			assert.Equal(t, Idle, m.Level())
			st[0].Prewake()
			assert.Equal(t, High, m.Level(), "Prewake leaves Idle as Wake does")
			for _, x := range st {
				assert.Len(t, x.wake, 1, "leaving Idle unparks every stage")
			}
			m.Close()
			for _, x := range st {
				assert.False(t, x.OnEmpty())
			}
			assert.Zero(t, m.parked.Load())
		})
	}
}

// TestStageStats: the per-stage snapshot names every stage in registration
// order, shows a parked stage as parked, and its counters add up to Stats.
func TestStageStats(t *testing.T) {
	m := New(Balanced)
	idle, err := m.Register("idle")
	require.NoError(t, err)
	_, err = m.Register("busy") // never polls: never parks
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for idle.OnEmpty() {
		}
	}()
	require.Eventually(t, func() bool { return m.StageStats(nil)[0].Parked }, 10*time.Second, 100*time.Microsecond)
	st := m.StageStats(make([]StageStats, 0, 2))
	require.Len(t, st, 2)
	assert.Equal(t, "idle", st[0].Name)
	assert.Equal(t, "busy", st[1].Name)
	assert.False(t, st[1].Parked)
	assert.Zero(t, st[1].Parks)
	assert.Positive(t, st[0].Parks)
	m.Close()
	<-done
	tot := m.Stats()
	var parks, unparks, yields uint64
	for _, s := range m.StageStats(nil) {
		parks, unparks, yields = parks+s.Parks, unparks+s.Unparks, yields+s.Yields
	}
	assert.Equal(t, tot.Parks, parks)
	assert.Equal(t, tot.Unparks, unparks)
	assert.Equal(t, tot.Yields, yields)
}
