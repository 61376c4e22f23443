package frontier

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func boundedWith(t *testing.T, capacity, lanes, depth int) (*Merger[int], []*Lane[int]) {
	t.Helper()
	m, err := NewBounded[int](capacity)
	require.NoError(t, err)
	ls := make([]*Lane[int], lanes)
	for i := range ls {
		ls[i], err = m.AddLane(uint64(i), depth)
		require.NoError(t, err)
	}
	return m, ls
}

func TestBoundedBudgetPerCycle(t *testing.T) {
	for _, lanes := range []int{1, 40} {
		t.Run(fmt.Sprint(lanes), func(t *testing.T) {
			m, ls := boundedWith(t, 3, lanes, 16)
			for i := range 10 {
				require.True(t, ls[i%lanes].TryPush(0, i))
			}
			// Nothing is admitted before the first cycle starts.
			assert.False(t, m.HasReady(0))
			_, _, ok := m.TryPop(0)
			assert.False(t, ok)
			for cycle := uint64(0); cycle < 4; cycle++ {
				m.PrepareCycle(cycle)
				got := drain(m, cycle)
				want := min(3, 10-3*int(cycle))
				assert.Len(t, got, want, "cycle %d", cycle)
				for k, p := range got {
					assert.Equal(t, 3*int(cycle)+k, p.v) // merge order: arrive ties by lane
				}
			}
			assert.True(t, m.Empty())
		})
	}
}

// A pop frees room for more admissions in the same cycle, but only while the
// cycle's budget lasts.
func TestBoundedPopMidCycle(t *testing.T) {
	m, ls := boundedWith(t, 2, 1, 16)
	for i := range 12 {
		require.True(t, ls[0].TryPush(0, i))
	}
	m.PrepareCycle(0)
	assert.Equal(t, []popped{{0, 0}}, drain1(m, 0)) // FIFO keeps 1; budget 0
	m.PrepareCycle(1)                               // FIFO 2 (1 carried), budget 1
	got := drain(m, 1)
	// Carried 1, admitted 1 at PrepareCycle, 1 more after the first pop.
	assert.Equal(t, []popped{{0, 1}, {0, 2}, {0, 3}}, got)
	m.PrepareCycle(2)
	assert.Equal(t, []popped{{0, 4}, {0, 5}}, drain(m, 2))
}

// A flush lowers occupancy but does not reset the budget.
func TestBoundedFlushMidCycle(t *testing.T) {
	m, ls := boundedWith(t, 2, 3, 16)
	for i := range 9 {
		require.True(t, ls[i%3].TryPush(0, i))
	}
	// Merge order is lane by lane: 0 3 6, 1 4 7, 2 5 8.
	m.PrepareCycle(0) // FIFO: 0, 3; budget 0
	odd := func(_ uint64, v *int) bool { return *v%2 == 1 }
	assert.Equal(t, 4, m.FlushIf(odd)) // 3 from the FIFO, 1, 5, 7 from lanes
	assert.Equal(t, []popped{{0, 0}}, drain(m, 0))
	assert.False(t, m.HasReady(0))
	assert.False(t, m.Empty())
	assert.Equal(t, 4, m.Flush()) // 6, 4, 2, 8
	assert.True(t, m.Empty())
	m.PrepareCycle(1)
	assert.False(t, m.HasReady(1))

	for i := range 4 {
		require.True(t, ls[0].TryPush(1, i))
	}
	// Cycle 1's budget is still unspent: the next call admits up to it.
	assert.True(t, m.HasReady(1))
	assert.Equal(t, []popped{{1, 0}, {1, 1}}, drain(m, 1))
}

// Admission takes only heads that are ready at the receiver cycle, in merge
// order, and the FIFO then serves them in that order.
func TestBoundedReadinessAndOrder(t *testing.T) {
	for _, lanes := range []int{3, 64} {
		t.Run(fmt.Sprint(lanes), func(t *testing.T) {
			m, ls := boundedWith(t, 4, lanes, 4)
			require.True(t, ls[lanes-1].TryPush(5, 1))
			require.True(t, ls[0].TryPush(7, 2))
			require.True(t, ls[1].TryPush(5, 3))
			c, ok := m.MinArrivalCycle()
			assert.True(t, ok)
			assert.Equal(t, uint64(5), c)
			m.PrepareCycle(4)
			assert.False(t, m.HasReady(4))
			m.PrepareCycle(6)
			assert.True(t, m.HasReady(6))
			c, _ = m.MinArrivalCycle()
			assert.Equal(t, uint64(5), c)
			assert.Equal(t, []popped{{5, 3}, {5, 1}}, drain(m, 6))
			// The budget is not spent, but the lane head is not ready at
			// the receiver cycle 6 even for a later TryPop cycle.
			assert.False(t, m.HasReady(7))
			c, _ = m.MinArrivalCycle()
			assert.Equal(t, uint64(7), c)
			m.PrepareCycle(7)
			assert.Equal(t, []popped{{7, 2}}, drain(m, 7))
			assert.True(t, m.Empty())
		})
	}
}

// With the FIFO full and never popped, lanes stop draining and each
// producer meets back pressure on its own lane only.
func TestBoundedBackPressure(t *testing.T) {
	for _, lanes := range []int{2, 33} {
		t.Run(fmt.Sprint(lanes), func(t *testing.T) {
			m, ls := boundedWith(t, 2, lanes, 2)
			a, b := ls[0], ls[lanes-1]
			cycle := uint64(0)
			push := func(l *Lane[int]) bool { return l.TryPush(cycle, int(cycle)) }
			// Cycle 0: both lanes feed the FIFO, which fills.
			require.True(t, push(a))
			require.True(t, push(b))
			m.PrepareCycle(cycle)
			assert.Equal(t, 0, a.ring.Len()+b.ring.Len())
			// Lane a's producer keeps going; the FIFO admits nothing more.
			for cycle = 1; cycle <= 2; cycle++ {
				require.True(t, push(a))
				m.PrepareCycle(cycle)
			}
			assert.False(t, push(a), "lane a is full")
			assert.True(t, push(b), "lane b still has room")
			assert.Equal(t, uint64(1), m.Overflows())
			// One pop frees one FIFO slot; the next cycle admits a's head.
			v, _, ok := m.TryPop(cycle)
			require.True(t, ok)
			assert.Equal(t, 0, v)
			m.PrepareCycle(cycle)
			assert.Equal(t, 1, a.ring.Len())
			assert.True(t, push(a))
		})
	}
}

func TestPrepareCycleUnbounded(t *testing.T) {
	m := New[int]()
	l, _ := m.AddLane(0, 2)
	require.True(t, l.TryPush(3, 1))
	m.PrepareCycle(0)
	assert.True(t, m.HasReady(3))
	assert.Equal(t, []popped{{3, 1}}, drain(m, 3))
}

func TestBoundedPopFiltered(t *testing.T) {
	m, ls := boundedWith(t, 2, 1, 8)
	for i := range 6 {
		require.True(t, ls[0].TryPush(0, i))
	}
	m.PrepareCycle(0)
	big := func(_ uint64, v *int) bool { return *v >= 3 }
	// 0 and 1 are rejected; the budget is spent, so nothing else this cycle.
	_, _, ok := m.PopFiltered(0, big)
	assert.False(t, ok)
	m.PrepareCycle(1)
	v, _, ok := m.PopFiltered(1, big) // 2 rejected, 3 kept
	require.True(t, ok)
	assert.Equal(t, 3, v)
	m.PrepareCycle(2)
	assert.Equal(t, []popped{{0, 4}, {0, 5}}, drain(m, 2))
}
