package chronon

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestConnLayout checks that a connection's per-message fields take one
// cache line per side, two lines apart (the adjacent-line prefetcher pairs
// lines), in an object of four lines, a size class the allocator aligns.
func TestConnLayout(t *testing.T) {
	var k conn[[3]uint64]
	prodEnd := unsafe.Offsetof(k.cross) + unsafe.Sizeof(k.cross)
	recv := unsafe.Offsetof(k.pops)
	// Everything of the cut but used, which only a refresh touches.
	recvEnd := unsafe.Offsetof(k.cut) + unsafe.Offsetof(k.cut.used)

	assert.LessOrEqual(t, prodEnd, uintptr(cacheLine), "the producer's fields fit the first line")
	assert.Equal(t, uintptr(2*cacheLine), recv, "the receiver's fields start the third line")
	assert.LessOrEqual(t, recvEnd, uintptr(3*cacheLine), "the receiver's fields fit the third line")
	assert.Equal(t, uintptr(4*cacheLine), unsafe.Sizeof(k))
}
