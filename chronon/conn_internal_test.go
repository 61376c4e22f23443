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

// TestPortLayout checks that what a send or a receive touches of its port
// sits in the port's first bytes: a unit's ports are per-unit working set
// in a large model, and a field moved past them costs a line a call.
func TestPortLayout(t *testing.T) {
	var o OutPort[[3]uint64]
	sendEnd := unsafe.Offsetof(o.noCancel) + unsafe.Sizeof(o.noCancel)
	for _, off := range []uintptr{unsafe.Offsetof(o.u), unsafe.Offsetof(o.conns), unsafe.Offsetof(o.epoch), unsafe.Offsetof(o.sent)} {
		assert.Less(t, off, sendEnd)
	}
	assert.LessOrEqual(t, sendEnd, uintptr(40), "Send's fields fit 40 bytes")

	var p InPort[[3]uint64]
	fanInEnd := unsafe.Offsetof(p.gap) + unsafe.Sizeof(p.gap)
	for _, off := range []uintptr{unsafe.Offsetof(p.u), unsafe.Offsetof(p.idle), unsafe.Offsetof(p.one), unsafe.Offsetof(p.merge), unsafe.Offsetof(p.conns)} {
		assert.Less(t, off, fanInEnd)
	}
	assert.LessOrEqual(t, fanInEnd, uintptr(cacheLine), "a fan-in receive's fields fit one line")
	assert.Equal(t, fanInEnd, unsafe.Offsetof(p.ring), "a single connection's lane follows")
	assert.LessOrEqual(t, unsafe.Offsetof(p.fhead)+unsafe.Sizeof(p.fhead), uintptr(cacheLine+48))
}
