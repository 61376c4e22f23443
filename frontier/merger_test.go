package frontier

import (
	"cmp"
	"errors"
	"slices"
	"testing"

	"github.com/lanework/lanework/ringbuf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type popped struct {
	arrive uint64
	v      int
}

// drain pops everything ready at cycle.
func drain(m *Merger[int], cycle uint64) []popped {
	var out []popped
	for {
		v, a, ok := m.TryPop(cycle)
		if !ok {
			return out
		}
		out = append(out, popped{a, v})
	}
}

func TestAddLaneErrors(t *testing.T) {
	m := New[int]()
	_, err := m.AddLane(0, 0)
	assert.ErrorIs(t, err, ErrDepth)
	assert.ErrorIs(t, err, ringbuf.ErrCapacity)
	_, err = m.AddLane(0, ringbuf.MaxCapacity+1)
	assert.ErrorIs(t, err, ErrDepth)
	assert.Equal(t, 0, m.Lanes())

	l, err := m.AddLane(0, 3)
	require.NoError(t, err)
	assert.Equal(t, 4, l.Cap())
	assert.Equal(t, 0, l.ID())
	l2, err := m.AddLane(9, 1)
	require.NoError(t, err)
	assert.Equal(t, 1, l2.ID())
	assert.Equal(t, uint64(9), l2.ConnID())

	require.True(t, l.TryPush(0, 1))
	_, err = m.AddLane(1, 1)
	assert.True(t, errors.Is(err, ErrStarted))
	assert.Equal(t, 2, m.Lanes())
}

func TestNewBoundedErrors(t *testing.T) {
	_, err := NewBounded[int](0)
	assert.ErrorIs(t, err, ErrCapacity)
	_, err = NewBounded[int](-3)
	assert.ErrorIs(t, err, ErrCapacity)
	_, err = NewBounded[int](ringbuf.MaxCapacity + 1)
	assert.ErrorIs(t, err, ErrCapacity)
	m, err := NewBounded[int](3)
	require.NoError(t, err)
	assert.True(t, m.Empty())
}

// Pushing, not consuming, fixes the lane set.
func TestStartedByPush(t *testing.T) {
	m := New[int]()
	l, _ := m.AddLane(0, 1)
	require.True(t, l.TryPush(0, 0))
	m2 := New[int]()
	_, err := m2.AddLane(0, 1)
	require.NoError(t, err)
	_, _, ok := m.TryPop(0)
	require.True(t, ok)
	_, err = m.AddLane(1, 1)
	assert.ErrorIs(t, err, ErrStarted)
	// Consumer calls alone do not start a merger.
	_, _, ok = m2.TryPop(10)
	assert.False(t, ok)
	_, err = m2.AddLane(1, 1)
	assert.NoError(t, err)
}

func TestOverflows(t *testing.T) {
	for _, lanes := range []int{1, 40} {
		m := New[int]()
		var ls []*Lane[int]
		for i := range lanes {
			l, err := m.AddLane(uint64(i), 2)
			require.NoError(t, err)
			ls = append(ls, l)
		}
		assert.True(t, ls[0].TryPush(1, 1))
		assert.True(t, ls[0].TryPush(1, 2))
		assert.False(t, ls[0].TryPush(1, 3))
		assert.False(t, ls[0].TryPush(1, 4))
		assert.Equal(t, uint64(2), m.Overflows())
		assert.Equal(t, []popped{{1, 1}}, drain1(m, 1))
		assert.True(t, ls[0].TryPush(1, 5))
		assert.Equal(t, []popped{{1, 2}, {1, 5}}, drain(m, 1))
		assert.Equal(t, uint64(2), m.Overflows())
	}
}

func drain1(m *Merger[int], cycle uint64) []popped {
	v, a, ok := m.TryPop(cycle)
	if !ok {
		return nil
	}
	return []popped{{a, v}}
}

// Ties on arrive go to the smaller connection id, then to the earlier lane.
func TestTieOrder(t *testing.T) {
	for _, lanes := range []int{3, 31, 32, 33, 100} {
		m := New[int]()
		var ls []*Lane[int]
		for i := range lanes {
			// connection ids descend, with pairs sharing an id.
			l, err := m.AddLane(uint64((lanes-i)/2), 4)
			require.NoError(t, err)
			ls = append(ls, l)
		}
		assert.Equal(t, lanes >= heapThreshold, m.heapMode)
		for i, l := range ls {
			require.True(t, l.TryPush(7, i))
		}
		got := drain(m, 7)
		require.Len(t, got, lanes)
		for k := 1; k < len(got); k++ {
			a, b := ls[got[k-1].v], ls[got[k].v]
			assert.True(t, a.connID < b.connID || a.connID == b.connID && a.id < b.id,
				"lanes %d: %d before %d", lanes, a.id, b.id)
		}
		assert.True(t, m.Empty())
	}
}

// The scan reads lanes in groups of four, entering at the group of the
// highest lane: every lane count below heapThreshold, every lane alone and
// all lanes at once must be seen, in key order.
func TestScanEveryLaneCount(t *testing.T) {
	for lanes := 1; lanes < heapThreshold; lanes++ {
		m := New[int]()
		var ls []*Lane[int]
		for i := range lanes {
			l, err := m.AddLane(uint64(i), 4)
			require.NoError(t, err)
			ls = append(ls, l)
		}
		require.False(t, m.heapMode)
		for i, l := range ls {
			require.True(t, l.TryPush(uint64(i), i))
			assert.Equal(t, []popped{{uint64(i), i}}, drain(m, uint64(i)), "lanes %d, lane %d alone", lanes, i)
		}
		// Arrive cycles descend with the lane, two per cycle: the pop order
		// is by arrive, then by lane.
		var want []popped
		for i := lanes - 1; i >= 0; i-- {
			a := uint64(lanes-1-i) / 2
			require.True(t, ls[i].TryPush(a, i))
			want = append(want, popped{a, i})
		}
		slices.SortStableFunc(want, func(x, y popped) int { return cmp.Or(cmp.Compare(x.arrive, y.arrive), cmp.Compare(x.v, y.v)) })
		assert.Equal(t, want, drain(m, uint64(lanes)), "lanes %d", lanes)
		assert.True(t, m.Empty())
	}
}

func TestReadiness(t *testing.T) {
	for _, lanes := range []int{4, 64} {
		m := New[int]()
		var ls []*Lane[int]
		for i := range lanes {
			l, _ := m.AddLane(uint64(i), 4)
			ls = append(ls, l)
		}
		_, ok := m.MinArrivalCycle()
		assert.False(t, ok)
		assert.True(t, m.Empty())
		assert.False(t, m.HasReady(^uint64(0)))

		require.True(t, ls[lanes-1].TryPush(10, 1))
		require.True(t, ls[0].TryPush(12, 2))
		c, ok := m.MinArrivalCycle()
		assert.True(t, ok)
		assert.Equal(t, uint64(10), c)
		assert.False(t, m.Empty())
		assert.False(t, m.HasReady(9))
		assert.True(t, m.HasReady(10))
		_, _, ok = m.TryPop(9)
		assert.False(t, ok)
		assert.Equal(t, []popped{{10, 1}}, drain(m, 11))
		c, _ = m.MinArrivalCycle()
		assert.Equal(t, uint64(12), c)
		assert.Equal(t, []popped{{12, 2}}, drain(m, 12))
		assert.True(t, m.Empty())
	}
}

// A hot lane that refills after each pop is reinserted every time, and a
// cold lane behind it still gets its turn when its key comes.
func TestHotLaneRefill(t *testing.T) {
	for _, lanes := range []int{8, 256} {
		m := New[int]()
		var ls []*Lane[int]
		for i := range lanes {
			l, _ := m.AddLane(uint64(i), 2)
			ls = append(ls, l)
		}
		hot := ls[lanes/2]
		cold := ls[lanes-1]
		require.True(t, cold.TryPush(50, -1))
		require.True(t, hot.TryPush(0, 0))
		var got []popped
		for i := 1; i <= 100; i++ {
			v, a, ok := m.TryPop(uint64(i))
			require.True(t, ok, "pop %d", i)
			got = append(got, popped{a, v})
			require.True(t, hot.TryPush(uint64(i), i))
		}
		got = append(got, drain(m, 200)...)
		// Until cycle 50 only the hot lane is ready. At cycle 51 the hot
		// head 50 ties with the cold 50 and wins on connection id; the cold
		// lane goes next.
		var want []popped
		for i := 0; i <= 100; i++ {
			want = append(want, popped{uint64(i), i})
			if i == 50 {
				want = append(want, popped{50, -1})
			}
		}
		assert.Equal(t, want, got, "lanes %d", lanes)
		assert.True(t, m.Empty())
	}
}

// Sparse 256-lane fan-in: only a few lanes ever carry traffic.
func TestSparseFanIn(t *testing.T) {
	const lanes = 256
	m := New[int]()
	var ls []*Lane[int]
	for i := range lanes {
		l, _ := m.AddLane(uint64(i), 8)
		ls = append(ls, l)
	}
	active := []int{1, lanes / 3, 2 * lanes / 3, lanes - 1}
	n := 0
	for cycle := uint64(0); cycle < 200; cycle++ {
		l := ls[active[cycle%4]]
		require.True(t, l.TryPush(cycle, int(cycle)))
		if cycle%3 == 0 {
			for _, a := range active {
				require.True(t, ls[a].TryPush(cycle, -a))
			}
		}
		for {
			_, a, ok := m.TryPop(cycle)
			if !ok {
				break
			}
			assert.Equal(t, cycle, a)
			n++
		}
		assert.True(t, m.Empty())
	}
	assert.Equal(t, 200+4*67, n)
}

func TestNonMonotonicHeadsOnly(t *testing.T) {
	for _, lanes := range []int{2, 40} {
		m := New[int]()
		var ls []*Lane[int]
		for i := range lanes {
			l, _ := m.AddLane(uint64(i), 4)
			ls = append(ls, l)
		}
		a, b := ls[0], ls[1]
		require.True(t, a.TryPush(10, 1))
		require.True(t, a.TryPush(3, 2)) // hidden behind its lane's head
		require.True(t, b.TryPush(5, 3))
		got := drain(m, 100)
		assert.Equal(t, []popped{{5, 3}, {10, 1}, {3, 2}}, got)
		// At cycle 5 the hidden message is not reachable.
		require.True(t, a.TryPush(10, 1))
		require.True(t, a.TryPush(3, 2))
		assert.False(t, m.HasReady(5))
		c, _ := m.MinArrivalCycle()
		assert.Equal(t, uint64(10), c)
		assert.Equal(t, 2, m.Flush())
	}
}

func TestPopFiltered(t *testing.T) {
	for _, lanes := range []int{3, 50} {
		m := New[int]()
		var ls []*Lane[int]
		for i := range lanes {
			l, _ := m.AddLane(uint64(i), 8)
			ls = append(ls, l)
		}
		for i := range 6 {
			require.True(t, ls[i%3].TryPush(uint64(i/3), i))
		}
		require.True(t, ls[2].TryPush(9, 100))
		var seen []int
		odd := func(_ uint64, v *int) bool { seen = append(seen, *v); return *v%2 == 1 }
		v, a, ok := m.PopFiltered(0, odd)
		require.True(t, ok)
		assert.Equal(t, 1, v)
		assert.Equal(t, uint64(0), a)
		v, _, ok = m.PopFiltered(5, odd)
		require.True(t, ok)
		assert.Equal(t, 3, v)
		v, _, ok = m.PopFiltered(5, odd)
		require.True(t, ok)
		assert.Equal(t, 5, v)
		_, _, ok = m.PopFiltered(5, odd)
		assert.False(t, ok)
		assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, seen)
		// Not-ready messages are neither shown to keep nor consumed.
		assert.Equal(t, []popped{{9, 100}}, drain(m, 9))
	}
}

func TestFlush(t *testing.T) {
	for _, lanes := range []int{3, 70} {
		m := New[int]()
		var ls []*Lane[int]
		for i := range lanes {
			l, _ := m.AddLane(uint64(i), 4)
			ls = append(ls, l)
		}
		for i := range 12 {
			require.True(t, ls[i%3].TryPush(uint64(i), i))
		}
		assert.Equal(t, 12, m.Flush())
		assert.True(t, m.Empty())
		assert.Equal(t, 0, m.Flush())
		for i := range 12 {
			require.True(t, ls[i%3].TryPush(uint64(i), i))
		}
		assert.Equal(t, 12, len(drain(m, 100)))
	}
}

// wrappedLane0 returns a merger of lanes lanes of capacity 4 whose lane 0
// has wrapped its ring: 0 to 5 pushed at arrivals 0 to 5, 0 and 1 popped,
// so 2 and 3 sit at the ring's end and 4 and 5 at its start.
func wrappedLane0(t *testing.T, lanes int) (*Merger[int], []*Lane[int]) {
	t.Helper()
	m := New[int]()
	var ls []*Lane[int]
	for i := range lanes {
		l, _ := m.AddLane(uint64(i), 4)
		ls = append(ls, l)
	}
	for i := range 3 {
		require.True(t, ls[0].TryPush(uint64(i), i))
	}
	require.Equal(t, []popped{{0, 0}, {1, 1}}, drain(m, 1))
	for i := 3; i < 6; i++ {
		require.True(t, ls[0].TryPush(uint64(i), i))
	}
	return m, ls
}

// TestFlushIfSpillOfTwo keeps both messages of the first run of a wrapped
// lane, so the spill holds two and the pop of its front finds the next head
// in the spill, not the ring.
func TestFlushIfSpillOfTwo(t *testing.T) {
	for _, lanes := range []int{3, 70} {
		m, ls := wrappedLane0(t, lanes)
		require.True(t, ls[1].TryPush(4, 40))
		assert.Equal(t, 1, m.FlushIf(func(_ uint64, v *int) bool { return *v == 4 }))
		assert.Equal(t, 1, m.spills)
		require.True(t, ls[0].TryPush(20, 20))
		assert.Equal(t, []popped{{2, 2}, {3, 3}, {4, 40}, {5, 5}, {20, 20}}, drain(m, 100))
		assert.True(t, m.Empty())
		assert.Equal(t, 0, m.spills)
	}
}

func TestFlushIf(t *testing.T) {
	for _, lanes := range []int{3, 70} {
		m, ls := wrappedLane0(t, lanes)
		for i := 10; i < 14; i++ {
			require.True(t, ls[1].TryPush(uint64(i), i))
		}
		var seen []int
		even := func(_ uint64, v *int) bool { seen = append(seen, *v); return *v%2 == 0 }
		assert.Equal(t, 4, m.FlushIf(even))
		assert.Equal(t, []int{2, 3, 4, 5, 10, 11, 12, 13}, seen)
		// The spilled lane still takes pushes and keeps its order.
		require.True(t, ls[0].TryPush(20, 21))
		assert.Equal(t, []popped{{3, 3}, {5, 5}, {11, 11}, {13, 13}, {20, 21}}, drain(m, 100))
		assert.True(t, m.Empty())
		assert.Equal(t, 0, m.spills)
	}
}
