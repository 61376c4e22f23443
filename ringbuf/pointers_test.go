package ringbuf

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

func TestHasPointers(t *testing.T) {
	type flat struct {
		A uint64
		B [3]int32
		C struct{ F float64 }
	}
	type nested struct {
		A uint64
		B [2]struct{ S string }
	}
	assert.False(t, hasPointers[uint64]())
	assert.False(t, hasPointers[flat]())
	assert.False(t, hasPointers[[0]*int](), "an empty array holds nothing")
	assert.False(t, hasPointers[struct{}]())
	assert.True(t, hasPointers[*int]())
	assert.True(t, hasPointers[string]())
	assert.True(t, hasPointers[[]byte]())
	assert.True(t, hasPointers[map[int]int]())
	assert.True(t, hasPointers[chan int]())
	assert.True(t, hasPointers[func()]())
	assert.True(t, hasPointers[any]())
	assert.True(t, hasPointers[unsafe.Pointer]())
	assert.True(t, hasPointers[nested](), "a pointer deep in an array of structs counts")
}

// A pointer-free ring skips the clear; a pointer ring clears on every
// consuming path (TryPop, TryPopN across the wrap, Advance).
func TestSPSCClearsOnlyPointerSlots(t *testing.T) {
	flat, _ := NewSPSC[uint64](4)
	flat.TryPushN([]uint64{1, 2, 3})
	flat.TryPop()
	assert.Equal(t, uint64(1), flat.cbuf[0], "pointer-free slots are left as they are")

	r, _ := NewSPSC[*int](4)
	v := new(int)
	for range 3 { // move the tickets so the next run wraps
		r.TryPush(v)
		r.TryPop()
	}
	r.TryPushN([]*int{v, v, v})
	dst := make([]*int, 2)
	assert.Equal(t, 2, r.TryPopN(dst), "a pop that wraps")
	r.Peek()
	r.Advance(1)
	assert.Equal(t, []*int{nil, nil, nil, nil}, r.cbuf)
}
