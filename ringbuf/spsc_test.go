package ringbuf

import (
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewSPSCCapacity(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{1, 1}, {2, 2}, {3, 4}, {1000, 1024}, {1024, 1024}, {MaxCapacity, MaxCapacity}} {
		r, err := NewSPSC[int](tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, r.Cap(), tc.in)
	}
	for _, bad := range []int{0, -1, MaxCapacity + 1} {
		_, err := NewSPSC[int](bad)
		assert.ErrorIs(t, err, ErrCapacity, bad)
	}
}

// TestSPSCLayout proves that the consumer-written and producer-written fields,
// each with its side's copy of the ring's shape, sit in one cache line each,
// a full pad apart and a full pad from whatever the allocator places after
// the ring; the header is two pads, a size class whose objects the allocator
// aligns to it, so nothing else shares the consumer's pad either.
func TestSPSCLayout(t *testing.T) {
	var r SPSC[[3]uint64]
	consEnd := unsafe.Offsetof(r.pointers) + unsafe.Sizeof(r.pointers)
	tail := unsafe.Offsetof(r.tail)
	prodEnd := unsafe.Offsetof(r.pmask) + unsafe.Sizeof(r.pmask)

	assert.Zero(t, unsafe.Offsetof(r.head))
	assert.LessOrEqual(t, consEnd, uintptr(64), "the consumer's fields fit one line")
	assert.GreaterOrEqual(t, tail, uintptr(cacheLinePad), "head and tail are a full pad apart")
	assert.LessOrEqual(t, prodEnd-tail, uintptr(64), "the producer's fields fit one line")
	assert.Equal(t, uintptr(2*cacheLinePad), unsafe.Sizeof(r), "tail is padded from the next object")
}

func TestSPSCBasic(t *testing.T) {
	r, err := NewSPSC[int](4)
	require.NoError(t, err)
	_, ok := r.TryPop()
	assert.False(t, ok)
	assert.Nil(t, r.Peek())
	for i := range 4 {
		assert.True(t, r.TryPush(i))
	}
	assert.False(t, r.TryPush(99), "every slot is usable, then full")
	assert.Equal(t, 4, r.Len())
	for i := range 4 {
		v, ok := r.TryPop()
		require.True(t, ok)
		assert.Equal(t, i, v)
	}
	assert.Equal(t, 0, r.Len())
}

func TestSPSCBatchAndWrap(t *testing.T) {
	r, err := NewSPSC[int](8)
	require.NoError(t, err)
	assert.Equal(t, 5, r.TryPushN([]int{0, 1, 2, 3, 4}))
	dst := make([]int, 3)
	assert.Equal(t, 3, r.TryPopN(dst))
	assert.Equal(t, []int{0, 1, 2}, dst)
	// Six fit (8 - 2 queued); this push wraps the end of the buffer.
	assert.Equal(t, 6, r.TryPushN([]int{5, 6, 7, 8, 9, 10, 11}))
	assert.Equal(t, 0, r.TryPushN([]int{12}))
	out := make([]int, 16)
	n := r.TryPopN(out)
	assert.Equal(t, []int{3, 4, 5, 6, 7, 8, 9, 10}, out[:n])
	assert.Equal(t, 0, r.TryPopN(out))
	assert.Equal(t, 0, r.TryPushN(nil))
}

func TestSPSCReserveCommit(t *testing.T) {
	r, err := NewSPSC[int](8)
	require.NoError(t, err)
	require.Equal(t, 6, r.TryPushN([]int{0, 1, 2, 3, 4, 5}))
	require.Equal(t, 6, r.TryPopN(make([]int, 6)))
	// Tail is at slot 6: a reservation of 5 stops at the buffer end.
	s := r.Reserve(5)
	require.Len(t, s, 2)
	s[0], s[1] = 60, 70
	assert.Equal(t, 0, r.Len(), "reserved slots are invisible before Commit")
	r.Commit(2)
	s = r.Reserve(10)
	require.Len(t, s, 6, "the rest of the free space, from slot 0")
	for i := range s {
		s[i] = 80 + i
	}
	r.Commit(3)
	assert.Equal(t, 5, r.Len())
	assert.Panics(t, func() { r.Commit(1) }, "nothing reserved")

	p := r.PeekN(10)
	assert.Equal(t, []int{60, 70}, p, "in-place run stops at the buffer end")
	r.Advance(1)
	assert.Equal(t, 70, *r.Peek())
	r.Advance(1)
	assert.Equal(t, []int{80, 81, 82}, r.PeekN(3))
	assert.Panics(t, func() { r.Advance(4) })
	r.Advance(3)
	assert.Nil(t, r.Peek())
	assert.Nil(t, r.Reserve(0))
}

func TestSPSCClaim(t *testing.T) {
	r, err := NewSPSC[int](2)
	require.NoError(t, err)
	for i := range 2 {
		p := r.Claim()
		require.NotNil(t, p, "slot %d is free", i)
		*p = 10 + i
		assert.Equal(t, i, r.Len(), "a claimed slot is invisible before Commit")
		assert.PanicsWithError(t, "ringbuf: Commit(2) exceeds the reservation of 1", func() { r.Commit(2) })
		r.Commit(1)
	}
	require.Len(t, r.Reserve(1), 0, "full ring")
	assert.Nil(t, r.Claim(), "full ring")
	assert.PanicsWithError(t, "ringbuf: Commit(1) exceeds the reservation of 0", func() { r.Commit(1) },
		"a failed Claim reserves nothing")
	v, ok := r.TryPop()
	require.True(t, ok)
	assert.Equal(t, 10, v)
	p := r.Claim()
	require.NotNil(t, p, "the popped slot is free again")
	*p = 12
	r.Commit(1)
	assert.Equal(t, []int{11}, r.PeekN(1), "the run stops at the buffer end")
	assert.PanicsWithError(t, "ringbuf: Advance(-1) exceeds the peeked elements: 1", func() { r.Advance(-1) })
	r.Advance(1)
	assert.Equal(t, 12, *r.Peek())
}

func TestSPSCClearsConsumedSlots(t *testing.T) {
	r, err := NewSPSC[*int](2)
	require.NoError(t, err)
	x := new(int)
	r.TryPush(x)
	r.TryPush(x)
	r.TryPop()
	r.Peek()
	r.Advance(1)
	assert.Equal(t, []*int{nil, nil}, r.cbuf, "consumed slots must not pin their values")
	r.TryPush(x)
	require.True(t, r.Drop())
	assert.Equal(t, []*int{nil, nil}, r.cbuf, "a dropped slot must not pin its value")
}

func TestSPSCDrop(t *testing.T) {
	r, _ := NewSPSC[int](2)
	r.setTickets(1<<64 - 1) // the drops cross the 2^64 wrap
	assert.False(t, r.Drop(), "empty")
	assert.Equal(t, 2, r.TryPushN([]int{1, 2}))
	require.Equal(t, 1, *r.Peek())
	assert.True(t, r.Drop())
	assert.Panics(t, func() { r.Advance(1) }, "Drop ends the peek: 2 was never peeked")
	assert.Equal(t, uint64(0), r.Head())
	assert.True(t, r.TryPush(3), "the dropped slot is free again")
	v, ok := r.TryPop()
	assert.Equal(t, 2, v)
	assert.True(t, ok)
	assert.True(t, r.Drop())
	assert.False(t, r.Drop())
	assert.Zero(t, r.Len())
}

// TestSPSCTicketWrap runs pushes and pops across the 2^32 and 2^64 ticket
// boundaries with every API.
func TestSPSCTicketWrap(t *testing.T) {
	for _, start := range []uint64{1<<32 - 5, 1<<64 - 5, 1<<64 - 1} {
		r, err := NewSPSC[uint64](4)
		require.NoError(t, err)
		r.setTickets(start)
		next, want := uint64(0), uint64(0)
		for round := range 20 {
			switch round % 3 {
			case 0:
				for r.TryPush(next) {
					next++
				}
			case 1:
				n := r.TryPushN([]uint64{next, next + 1, next + 2})
				next += uint64(n)
			case 2:
				s := r.Reserve(2)
				for i := range s {
					s[i] = next
					next++
				}
				r.Commit(len(s))
			}
			require.LessOrEqual(t, r.Len(), 4)
			switch round % 2 {
			case 0:
				for {
					v, ok := r.TryPop()
					if !ok {
						break
					}
					require.Equal(t, want, v, "start %#x", start)
					want++
				}
			case 1:
				for p := r.PeekN(3); len(p) > 0; p = r.PeekN(3) {
					for _, v := range p {
						require.Equal(t, want, v)
						want++
					}
					r.Advance(len(p))
				}
			}
		}
		assert.Equal(t, next, want)
		assert.Greater(t, want, uint64(20))
	}
}

// spscStress moves n values from a producer to a consumer goroutine using the
// given push and pop styles and checks that each arrives exactly once, in
// order.
func spscStress(t *testing.T, capacity, n int, push func(r *SPSC[uint64], next uint64, n uint64) uint64, pop func(r *SPSC[uint64], want uint64, buf []uint64) (uint64, bool)) {
	r, err := NewSPSC[uint64](capacity)
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for next := uint64(0); next < uint64(n); {
			k := push(r, next, uint64(n))
			if k == 0 {
				runtime.Gosched()
			}
			next += k
		}
	}()
	buf := make([]uint64, 64)
	var want uint64
	for want < uint64(n) {
		got, ok := pop(r, want, buf)
		if !ok {
			t.Fatalf("out of order at %d", want)
		}
		if got == want {
			runtime.Gosched()
		}
		want = got
	}
	wg.Wait()
	assert.Equal(t, 0, r.Len())
}

// stressCount is the number of values each stress case moves.
const stressCount = 10_000_000

func TestSPSCStress(t *testing.T) {
	n := stressCount
	single := func(r *SPSC[uint64], next, _ uint64) uint64 {
		if r.TryPush(next) {
			return 1
		}
		return 0
	}
	batch := func(r *SPSC[uint64], next, end uint64) uint64 {
		var src [37]uint64
		k := min(uint64(len(src)), end-next)
		for i := range k {
			src[i] = next + i
		}
		return uint64(r.TryPushN(src[:k]))
	}
	reserve := func(r *SPSC[uint64], next, end uint64) uint64 {
		s := r.Reserve(int(min(53, end-next)))
		for i := range s {
			s[i] = next + uint64(i)
		}
		r.Commit(len(s))
		return uint64(len(s))
	}
	popOne := func(r *SPSC[uint64], want uint64, _ []uint64) (uint64, bool) {
		v, ok := r.TryPop()
		if !ok {
			return want, true
		}
		return want + 1, v == want
	}
	popBatch := func(r *SPSC[uint64], want uint64, buf []uint64) (uint64, bool) {
		k := r.TryPopN(buf)
		for i, v := range buf[:k] {
			if v != want+uint64(i) {
				return want, false
			}
		}
		return want + uint64(k), true
	}
	popInPlace := func(r *SPSC[uint64], want uint64, _ []uint64) (uint64, bool) {
		p := r.PeekN(29)
		for i, v := range p {
			if v != want+uint64(i) {
				return want, false
			}
		}
		r.Advance(len(p))
		return want + uint64(len(p)), true
	}
	popDrop := func(r *SPSC[uint64], want uint64, _ []uint64) (uint64, bool) {
		p := r.Peek()
		if p == nil {
			return want, true
		}
		v := *p
		return want + 1, r.Drop() && v == want
	}
	cases := []struct {
		name     string
		capacity int
		push     func(*SPSC[uint64], uint64, uint64) uint64
		pop      func(*SPSC[uint64], uint64, []uint64) (uint64, bool)
	}{
		{"single", 1024, single, popOne},
		{"batch", 1024, batch, popBatch},
		{"reserve-peek", 1024, reserve, popInPlace},
		{"mixed", 128, reserve, popBatch},
		{"one-slot", 1, single, popOne},
		{"one-slot-batch", 1, batch, popInPlace},
		{"one-slot-drop", 1, single, popDrop},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			count := n
			if tc.capacity == 1 {
				count = n / 10 // every item is a cross-core handoff
			}
			spscStress(t, tc.capacity, count, tc.push, tc.pop)
		})
	}
}

func TestSPSCNoAllocs(t *testing.T) {
	r, err := NewSPSC[[64]byte](64)
	require.NoError(t, err)
	var v [64]byte
	buf := make([][64]byte, 8)
	allocs := testing.AllocsPerRun(1000, func() {
		r.TryPush(v)
		r.TryPop()
		r.TryPushN(buf)
		r.TryPopN(buf)
		s := r.Reserve(4)
		r.Commit(len(s))
		p := r.PeekN(4)
		r.Advance(len(p))
		r.TryPush(v)
		r.Peek()
		r.Drop()
		_ = r.Len()
	})
	assert.Zero(t, allocs)
}

func TestSPSCHeadTail(t *testing.T) {
	r, _ := NewSPSC[int](4)
	r.setTickets(1<<64 - 2) // the tickets cross the 2^64 wrap below
	assert.Equal(t, uint64(1<<64-2), r.Head())
	assert.Equal(t, r.Head(), r.Tail(), "empty")
	assert.Equal(t, 3, r.TryPushN([]int{1, 2, 3}))
	assert.Equal(t, uint64(1), r.Tail(), "three published, past the wrap")
	r.TryPop()
	assert.Equal(t, uint64(1<<64-1), r.Head())
	assert.Equal(t, uint64(r.Len()), r.Tail()-r.Head())
	s := r.Reserve(1)
	require.Len(t, s, 1)
	assert.Equal(t, uint64(1), r.Tail(), "a reservation publishes nothing")
	r.Commit(1)
	assert.Equal(t, uint64(2), r.Tail())
}

// TestSPSCFootprint checks that Footprint reports the consumer's and the
// producer's header lines, each within the ring and one line long.
func TestSPSCFootprint(t *testing.T) {
	r, err := NewSPSC[uint64](8)
	require.NoError(t, err)
	var got []uintptr
	r.Footprint(func(p unsafe.Pointer, size uintptr) {
		assert.LessOrEqual(t, size, uintptr(64))
		assert.GreaterOrEqual(t, uintptr(p), uintptr(unsafe.Pointer(r)))
		assert.LessOrEqual(t, uintptr(p)+size, uintptr(unsafe.Pointer(r))+unsafe.Sizeof(*r))
		got = append(got, uintptr(p))
	})
	assert.Equal(t, []uintptr{uintptr(unsafe.Pointer(&r.head)), uintptr(unsafe.Pointer(&r.tail))}, got)
}
