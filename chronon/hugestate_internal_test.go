package chronon

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type spanUnit struct {
	Base
	In  InPort[uint64]
	Out [2]OutPort[uint64]
}

func (spanUnit) Tick() {}

// TestStateSpanCoversTheState: the span Build collapses into huge pages
// holds every unit, connection, lane and merge of the simulation, and a
// small model's span is too small to collapse.
func TestStateSpanCoversTheState(t *testing.T) {
	for _, n := range []int{3, 400} {
		s := New()
		us := make([]*spanUnit, n)
		for i := range us {
			us[i] = &spanUnit{}
			require.NoError(t, s.Add(fmt.Sprint("u", i), us[i]))
		}
		for i, u := range us {
			require.NoError(t, Connect(&u.Out[0], &us[(i+1)%n].In, Capacity(4)))
			require.NoError(t, Connect(&u.Out[1], &us[(i*7+1)%n].In, Delay(2), Capacity(2)))
		}
		require.NoError(t, s.Build())
		lo, hi, conns := stateSpan(s)
		require.Equal(t, 2*n, conns)
		in := func(p unsafe.Pointer, size uintptr) bool {
			return p == nil || lo <= uintptr(p) && uintptr(p)+size <= hi
		}
		for _, u := range s.units {
			assert.True(t, in(unsafe.Pointer(u), unsafe.Sizeof(*u)))
		}
		for _, u := range us {
			for _, k := range u.In.conns {
				assert.True(t, in(unsafe.Pointer(k), unsafe.Sizeof(*k)))
				assert.True(t, in(unsafe.Pointer(k.ring), unsafe.Sizeof(*k.ring)))
				assert.True(t, in(unsafe.Pointer(k.flane), unsafe.Sizeof(*k.flane)))
			}
			assert.True(t, in(unsafe.Pointer(u.In.merge), unsafe.Sizeof(*u.In.merge)))
		}
		if n == 3 {
			assert.Less(t, hi-lo, uintptr(minHugeSpan), "a small model is not collapsed")
		}
	}
}
