package frontier

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func withProcs(t *testing.T, n int) {
	old := runtime.GOMAXPROCS(n)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

// TestConcurrentRounds runs real producer goroutines in lockstep rounds, as
// the simulator does: in round r every producer pushes messages arriving
// after r while the consumer, at the same time, pops everything ready at r.
// What is ready at r was pushed in earlier rounds, so the consumer's output
// is fixed by the keys alone: unbounded, it must equal every message stably
// sorted by key; bounded, the reference model's output for the same pushes
// and receiver cycles, whatever the interleaving.
func TestConcurrentRounds(t *testing.T) {
	withProcs(t, 2)
	for _, capacity := range []int{0, 5} {
		for _, n := range []int{2, 8, 31, 32, 64} {
			t.Run(fmt.Sprintf("cap=%d/N=%d", capacity, n), func(t *testing.T) {
				concurrentRounds(t, n, capacity)
			})
		}
	}
}

func concurrentRounds(t *testing.T, n, capacity int) {
	const rounds, perRound, maxDelay = 60, 3, 4
	m := New[int]()
	if capacity > 0 {
		m, _ = NewBounded[int](capacity)
	}
	ref := newRefModel(capacity)
	depth := perRound * (maxDelay + 2)
	if capacity > 0 {
		depth = perRound * rounds // the bounded FIFO drains slower than producers fill
	}
	ls := make([]*Lane[int], n)
	for i := range ls {
		l, err := m.AddLane(uint64(n-i)/2, depth)
		require.NoError(t, err)
		ls[i] = l
		ref.addLane(uint64(n-i)/2, depth)
	}
	var all []keyed
	var want []popped
	for r := range rounds {
		for i := range n {
			// A fixed delay per lane: arrive cycles are monotonic
			// within a lane, with same-cycle ties.
			arrive := uint64(r+1) + uint64(i%(maxDelay+1))
			for range perRound {
				ref.push(i, arrive, len(all))
				all = append(all, keyed{arrive, ls[i].connID, i, len(all)})
			}
		}
		if capacity > 0 {
			ref.prepare(uint64(r))
			for {
				p, ok := ref.pop(uint64(r))
				if !ok {
					break
				}
				want = append(want, p)
			}
		}
	}
	start := make([]chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		start[i] = make(chan int)
		go func() {
			for r := range start[i] {
				base := (r*n + i) * perRound
				for k := range perRound {
					msg := all[base+k]
					if !ls[i].TryPush(msg.arrive, msg.v) {
						panic("lane full")
					}
				}
				wg.Done()
			}
		}()
	}
	var got []popped
	for r := range rounds {
		wg.Add(n)
		for i := range n {
			start[i] <- r
		}
		m.PrepareCycle(uint64(r))
		got = append(got, drain(m, uint64(r))...)
		wg.Wait()
	}
	for i := range n {
		close(start[i])
	}
	assert.False(t, m.Empty())
	assert.Zero(t, m.Overflows())
	if capacity > 0 {
		equalSeq(t, want, got)
		return
	}
	got = append(got, drain(m, ^uint64(0))...)
	assert.True(t, m.Empty())
	equalSeq(t, sortedRef(all), got)
}

// TestConcurrentFreeRun lets producers push as fast as they can, retrying
// on a full lane, while the consumer pops whatever is there. Every message
// must come out exactly once and in its lane's order; once the producers
// have stopped, one pass must find everything left (no lost notification)
// and then Empty must hold.
func TestConcurrentFreeRun(t *testing.T) {
	withProcs(t, 2)
	for _, n := range []int{2, 8, 64} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			per := 3000
			if n == 64 {
				per = 300
			}
			m := New[int]()
			ls := make([]*Lane[int], n)
			for i := range ls {
				l, err := m.AddLane(uint64(i), 8)
				require.NoError(t, err)
				ls[i] = l
			}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := 0; k < per; {
						if ls[i].TryPush(uint64(k/4), i*per+k) {
							k++
							continue
						}
						select {
						case <-stop:
							return
						default:
							runtime.Gosched()
						}
					}
				}()
			}
			next := make([]int, n) // next expected sequence per lane
			seen := 0
			check := func(v int, a uint64) bool {
				i, k := v/per, v%per
				if k != next[i] || a != uint64(k/4) {
					return false
				}
				next[i]++
				seen++
				return true
			}
			// Pop while producers run, half of the total.
			for seen < n*per/2 {
				v, a, ok := m.TryPop(^uint64(0))
				if !ok {
					runtime.Gosched()
					continue
				}
				if !check(v, a) {
					close(stop)
					wg.Wait()
					t.Fatalf("out of order: %d at %d", v, a)
				}
			}
			// Let the producers finish, popping to make room for them.
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			for finished := false; !finished; {
				select {
				case <-done:
					finished = true
				default:
					if v, a, ok := m.TryPop(^uint64(0)); ok {
						require.True(t, check(v, a), "out of order: %d", v)
					} else {
						runtime.Gosched()
					}
				}
			}
			for _, p := range drain(m, ^uint64(0)) {
				require.True(t, check(p.v, p.arrive))
			}
			assert.Equal(t, n*per, seen, "a message was left unseen after producers stopped")
			assert.True(t, m.Empty())
		})
	}
}

// equalSeq compares long pop sequences, reporting the first difference.
func equalSeq(t *testing.T, want, got []popped) {
	t.Helper()
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			t.Fatalf("pop %d: got %v, want %v", i, got[i], want[i])
		}
	}
	require.Equal(t, len(want), len(got))
}

// TestHandshakeNoLostWakeup makes every push race the consumer's recheck:
// in heap mode, each producer pushes its next message only once the
// consumer has popped the previous one, so the push lands while the
// consumer is reading the lane empty, removing it from the heap and
// clearing notification words. A lost wakeup would leave a message in a
// lane nobody reads again: the consumer would stop making progress, which
// the test reports after a generous deadline (a stalled merger never
// recovers, so the deadline only bounds how long a failure takes to show).
func TestHandshakeNoLostWakeup(t *testing.T) {
	withProcs(t, 2)
	per := 20000
	if testing.Short() {
		per = 3000
	}
	const lanes = 130 // three notification words
	m := New[int]()
	ls := make([]*Lane[int], lanes)
	for i := range ls {
		l, err := m.AddLane(uint64(i), 2)
		require.NoError(t, err)
		ls[i] = l
	}
	active := []int{3, 40, 64, 100, 129} // two words shared by two lanes
	popped := make([]atomic.Int64, len(active))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for j, li := range active {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range per {
				for popped[j].Load() < int64(k) { // wait for the consumer
					select {
					case <-stop:
						return
					default:
						runtime.Gosched()
					}
				}
				if !ls[li].TryPush(uint64(k), j*per+k) {
					panic("lane full: at most one message is in flight")
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for seen := 0; seen < len(active)*per; {
		v, _, ok := m.TryPop(^uint64(0))
		if !ok {
			require.True(t, time.Now().Before(deadline), "no progress after %d messages: lost wakeup", seen)
			m.Empty() // the query paths share the refresh
			runtime.Gosched()
			continue
		}
		j, k := v/per, v%per
		require.Equal(t, popped[j].Load(), int64(k), "lane %d out of order", active[j])
		popped[j].Store(int64(k + 1))
		seen++
	}
	assert.True(t, m.Empty())
}
