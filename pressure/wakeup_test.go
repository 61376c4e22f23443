package pressure

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pauses makes a goroutine stop for a random time up to max after about one
// item in every.
type pauses struct {
	every int
	max   time.Duration
}

func (p *pauses) maybe(rng *rand.Rand) {
	if p == nil || rng.IntN(p.every) != 0 {
		return
	}
	d := time.Duration(rng.Int64N(int64(p.max)) + 1)
	if d >= 100*time.Microsecond {
		time.Sleep(d)
		return
	}
	// Timers are too coarse for microsecond pauses: wait them out polling.
	for start := time.Now(); time.Since(start) < d; {
		runtime.Gosched()
	}
}

// handoff runs one producer/consumer pair of stages (see handoffPairs).
func handoff(t *testing.T, m *Manager, items int, p *pauses) {
	handoffPairs(t, m, 1, items, p)
}

// handoffPairs runs pairs of stages on m, each pair handing items (in order)
// through a 4-slot ring, with random pauses on both sides, so that consumers
// park on an empty ring and producers park on a full one. A watchdog fails
// the test if no handoff completes for 1 s: with pauses far shorter than
// that, such a stall is a lost wakeup.
func handoffPairs(t *testing.T, m *Manager, pairs, items int, p *pauses) {
	t.Helper()
	handoffPairsWith(t, m, pairs, items, p, false)
}

// handoffPairsWith is handoffPairs; with targeted, each side wakes its peer
// with Stage.Wake instead of Manager.Wake.
func handoffPairsWith(t *testing.T, m *Manager, pairs, items int, p *pauses, targeted bool) {
	t.Helper()
	var progress atomic.Int64
	var wg sync.WaitGroup
	for pair := range pairs {
		r := newRing(4)
		prod, err := m.Register("producer")
		require.NoError(t, err)
		cons, err := m.Register("consumer")
		require.NoError(t, err)
		wg.Add(2)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(pair), 1))
			for i := 0; i < items; {
				if r.push(uint64(i)) {
					prod.OnWork()
					if targeted {
						cons.Wake()
					} else {
						m.Wake() // after publishing: required
					}
					progress.Add(1)
					i++
					p.maybe(rng)
				} else if !prod.OnEmpty() {
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(pair), 2))
			for want := uint64(0); want < uint64(items); {
				if v, ok := r.pop(); ok {
					cons.OnWork()
					if targeted {
						prod.Wake()
					} else {
						m.Wake() // room in the ring is work for the producer
					}
					if v != want {
						t.Errorf("pair %d: got item %d, want %d", pair, v, want)
						return
					}
					progress.Add(1)
					want++
					p.maybe(rng)
				} else if !cons.OnEmpty() {
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	last, lastChange := int64(-1), time.Now()
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			if n := progress.Load(); n != last {
				last, lastChange = n, now
			} else if now.Sub(lastChange) > time.Second {
				t.Errorf("no handoff for %v after %d steps of %d: lost wakeup (stats %+v)",
					now.Sub(lastChange), n, 2*pairs*items, m.Stats())
				m.Close()
				<-done
				return
			}
		}
	}
}

func TestNoLostWakeup(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	// Eager thresholds park after a handful of empty polls, so almost every
	// handoff races a park against an unpark: 2 pairs, 1M handoffs in all.
	t.Run("eager", func(t *testing.T) {
		m := New(Balanced)
		m.p = params{freeSpin: 0, spin: 1, park: true}
		handoffPairs(t, m, 2, 500_000, &pauses{every: 32, max: 50 * time.Microsecond})
		st := m.Stats()
		m.Close()
		t.Logf("%+v", st)
		assert.Greater(t, st.Parks, uint64(10_000), "the test must exercise parking")
	})
	// The same with each side waking only its peer (Stage.Wake).
	t.Run("eager-targeted", func(t *testing.T) {
		m := New(Balanced)
		m.p = params{freeSpin: 0, spin: 1, park: true}
		handoffPairsWith(t, m, 2, 500_000, &pauses{every: 32, max: 50 * time.Microsecond}, true)
		st := m.Stats()
		m.Close()
		t.Logf("%+v", st)
		assert.Greater(t, st.Parks, uint64(10_000), "the test must exercise parking")
	})
	// The real strategies, with pauses long enough to reach Idle sometimes.
	for _, s := range strategies {
		t.Run(s.String(), func(t *testing.T) {
			m := New(s)
			handoffPairs(t, m, 2, 50_000, &pauses{every: 1000, max: 3 * time.Millisecond})
			st := m.Stats()
			m.Close()
			t.Logf("%+v", st)
			if s == LowLatency {
				assert.Zero(t, st.Parks)
			} else {
				assert.NotZero(t, st.Parks)
			}
		})
	}
}
