package frontier

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Registration crosses the scan-to-heap threshold at 32 lanes: below it no
// lane has a notification bit, from it on every lane has its own, and the
// merger answers the same either way, including after consumer calls made
// while it was still scanning.
func TestThreshold(t *testing.T) {
	m := New[int]()
	var ls []*Lane[int]
	for i := range 2 * 64 {
		// Before the switch, query the consumer side: it must carry no
		// state that the switch would invalidate.
		assert.True(t, m.Empty())
		_, _, ok := m.TryPop(100)
		assert.False(t, ok)

		l, err := m.AddLane(uint64(i%7), 2)
		require.NoError(t, err)
		ls = append(ls, l)
		n := len(ls)
		require.Equal(t, n >= heapThreshold, m.heapMode, "%d lanes", n)
		bits := map[uintptr]uint64{}
		for _, x := range ls {
			if n < heapThreshold {
				assert.Nil(t, x.word)
				continue
			}
			require.NotNil(t, x.word)
			p := uintptr(unsafe.Pointer(x.word))
			assert.Zero(t, p%cacheLine, "notification word not line-aligned")
			assert.Zero(t, bits[p]&x.bit, "two lanes share a bit")
			bits[p] |= x.bit
		}
		if n >= heapThreshold {
			assert.Len(t, bits, (n+63)/64)
		}
		if n == heapThreshold-1 || n == heapThreshold || n == 64 || n == 65 {
			// Right at the threshold and at a word boundary: check the order.
			for k, x := range ls {
				require.True(t, x.TryPush(uint64(k%3), k))
			}
			got := drain(m, 10)
			require.Len(t, got, n)
			for k := 1; k < n; k++ {
				a, b := got[k-1], got[k]
				la, lb := ls[a.v], ls[b.v]
				assert.True(t, a.arrive < b.arrive || a.arrive == b.arrive &&
					(la.connID < lb.connID || la.connID == lb.connID && la.id < lb.id))
			}
			// Pushing started the merger; restart with a fresh one of the
			// same shape to keep registering.
			m2 := New[int]()
			ls2 := make([]*Lane[int], 0, n)
			for k := range n {
				l, err := m2.AddLane(uint64(k%7), 2)
				require.NoError(t, err)
				ls2 = append(ls2, l)
			}
			m, ls = m2, ls2
		}
	}
}
