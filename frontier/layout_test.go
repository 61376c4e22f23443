package frontier

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestMergerLayout checks that a scan-mode pop of up to four lanes reads
// three lines of the merger: the flags and counts with rings[0:4] in the
// first, heads[0:4] and hd[0:4] each within one, at eight bytes a lane (a
// merger is per-receiver working set in a large model).
func TestMergerLayout(t *testing.T) {
	var m Merger[[3]uint64]
	for _, off := range []uintptr{unsafe.Offsetof(m.bounded), unsafe.Offsetof(m.heapMode), unsafe.Offsetof(m.known), unsafe.Offsetof(m.spills), unsafe.Offsetof(m.nscan)} {
		assert.Less(t, off, unsafe.Offsetof(m.rings))
	}
	assert.LessOrEqual(t, unsafe.Offsetof(m.rings)+4*unsafe.Sizeof(m.rings[0]), uintptr(cacheLine), "flags and rings[0:4] in one line")
	for _, off := range []uintptr{unsafe.Offsetof(m.heads), unsafe.Offsetof(m.hd)} {
		assert.LessOrEqual(t, off%cacheLine+32, uintptr(cacheLine), "the first four entries in one line")
	}
	assert.Equal(t, uintptr(8), unsafe.Sizeof(m.heads[0]))
	assert.Equal(t, uintptr(8), unsafe.Sizeof(m.rings[0]))
}

// TestFootprint checks that a lane reports itself and its ring's two
// header lines, and a scan-mode merger its three lines of flags and tables
// and each lane's ring header.
func TestFootprint(t *testing.T) {
	m := New[int]()
	var lanes []*Lane[int]
	for i := range 3 {
		l, err := m.AddLane(uint64(i), 4)
		assert.NoError(t, err)
		lanes = append(lanes, l)
	}
	var n int
	lanes[0].Footprint(func(p unsafe.Pointer, _ uintptr) {
		if n == 0 {
			assert.Equal(t, unsafe.Pointer(lanes[0]), p)
		}
		n++
	})
	assert.Equal(t, 3, n)
	lines := map[uintptr]bool{}
	n = 0
	m.Footprint(func(p unsafe.Pointer, size uintptr) {
		for a := uintptr(p) &^ 63; a < uintptr(p)+size; a += 64 {
			lines[a] = true
		}
		n++
	})
	assert.Equal(t, 3+2*3, n, "flags and tables, then two header lines a lane")
	assert.True(t, lines[uintptr(unsafe.Pointer(&m.hd[0]))&^63])
}
