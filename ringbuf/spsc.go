package ringbuf

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// SPSC is a bounded single-producer single-consumer ring.
//
// Exactly one goroutine may call the producer methods (TryPush, TryPushN,
// Reserve, Claim, Commit) and exactly one goroutine the consumer methods (TryPop,
// TryPopN, Peek, PeekN, Advance); the two may be the same goroutine. Len and
// Cap may be called from anywhere.
//
// The zero value is not usable; create rings with NewSPSC.
type SPSC[T any] struct {
	// Consumer-written line: head is the next ticket to read; cachedTail
	// is the consumer's private, possibly stale, copy of tail. The line
	// also holds the consumer's copy of the ring's shape (read-only after
	// construction), so a pop touches no header line but this one, and the
	// producer's only when the cached tail runs out.
	head       atomic.Uint64
	cachedTail uint64
	peeked     uint64 // slots handed out by PeekN and not yet Advanced
	cbuf       []T
	cmask      uint64
	pointers   bool // T holds pointers: consumed slots are cleared
	_          [cacheLinePad - 57]byte

	// Producer-written line: tail is the next ticket to write; cachedHead
	// is the producer's private, possibly stale, copy of head; and the
	// producer's copy of the shape.
	tail       atomic.Uint64
	cachedHead uint64
	reserved   uint64 // slots handed out by Reserve and not yet Committed
	pbuf       []T
	pmask      uint64
	_          [cacheLinePad - 56]byte
}

// NewSPSC returns an empty ring with room for capacity elements, rounded up
// to a power of two. It returns ErrCapacity if capacity is below 1 or above
// MaxCapacity.
func NewSPSC[T any](capacity int) (*SPSC[T], error) {
	c, err := roundCapacity(capacity)
	if err != nil {
		return nil, err
	}
	buf := make([]T, c)
	return &SPSC[T]{cbuf: buf, cmask: c - 1, pointers: hasPointers[T](), pbuf: buf, pmask: c - 1}, nil
}

// setTickets moves an empty ring's head and tail to start; tests use it to
// run across the 2^32 and 2^64 ticket boundaries.
func (r *SPSC[T]) setTickets(start uint64) {
	r.head.Store(start)
	r.tail.Store(start)
	r.cachedHead, r.cachedTail = start, start
}

// Cap returns the number of slots.
func (r *SPSC[T]) Cap() int { return len(r.pbuf) }

// Len returns the number of published, unconsumed elements. Called by a
// third goroutine it is a snapshot that may be stale by the time it returns.
func (r *SPSC[T]) Len() int {
	h := r.head.Load()
	t := r.tail.Load()
	n := t - h // modulo 2^64; a concurrent pop may make h newer than t
	if n > uint64(len(r.pbuf)) {
		return 0
	}
	return int(n)
}

// Head returns the ticket of the next element the consumer will take: the
// number of elements consumed since the ring was made. Tail returns the
// ticket the producer will write next: the number of elements published.
// Both are atomic loads; Tail() != Head() is the cheapest emptiness test a
// consumer scanning many rings can make (Len also clamps a stale pair).
// Called by a goroutine other than the one that advances the ticket, the
// result is a snapshot that may be stale by the time it returns.
//
// Both call the atomic load directly rather than through atomic.Uint64's
// method (whose value is the struct's only non-empty field): a method
// inlined inside an inlined method leaves the compiler an inline-mark NOP
// at each call site, one instruction per lane in frontier's scan.
// A declaration at the end of this file checks the premise at compile time.
func (r *SPSC[T]) Head() uint64 { return atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.head))) }

// Tail returns the ticket the producer will write next; see Head.
func (r *SPSC[T]) Tail() uint64 { return atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.tail))) }

// free returns how many slots the producer may write at ticket t, reloading
// head only when the cached copy says fewer than want are free.
func (r *SPSC[T]) free(t uint64, want uint64) uint64 {
	size := uint64(len(r.pbuf))
	f := size - (t - r.cachedHead)
	if f < want {
		// Acquire: this load observes the consumer's release of head, so
		// its reads of the freed slots happen before our overwrites.
		r.cachedHead = r.head.Load()
		f = size - (t - r.cachedHead)
	}
	return f
}

// TryPush appends v and reports whether there was room. Producer only.
//
// The fast path is small enough to inline into the caller; keep it so.
func (r *SPSC[T]) TryPush(v T) bool {
	t := atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.tail))) // own field; not r.tail.Load(): see Head
	if t-r.cachedHead >= uint64(len(r.pbuf)) {
		// Acquire: see free.
		r.cachedHead = r.head.Load()
		if t-r.cachedHead >= uint64(len(r.pbuf)) {
			return false
		}
	}
	r.pbuf[t&r.pmask] = v
	// release: publishes the slot write above
	if plainRelease {
		*(*uint64)(unsafe.Pointer(&r.tail)) = t + 1 // storeRelease, spelled out (see release.go)
	} else {
		storeRelease(&r.tail, t+1)
	}
	return true
}

// TryPushN appends as many leading elements of src as fit and returns how
// many it appended. The elements become visible to the consumer together.
// Producer only.
func (r *SPSC[T]) TryPushN(src []T) int {
	t := r.tail.Load()
	n := min(uint64(len(src)), r.free(t, uint64(len(src))))
	if n == 0 {
		return 0
	}
	i := t & r.pmask
	k := copy(r.pbuf[i:], src[:n])
	copy(r.pbuf, src[k:n])
	storeRelease(&r.tail, t+n)
	return int(n)
}

// Reserve returns up to n contiguous free slots, starting at the tail, for
// the producer to fill in place; it may return fewer than n (the ring is
// nearly full, or the free space wraps) or none. The slots are not visible
// to the consumer until Commit. A later Reserve before Commit replaces the
// earlier reservation. Producer only.
func (r *SPSC[T]) Reserve(n int) []T {
	if n <= 0 {
		r.reserved = 0
		return nil
	}
	t := atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.tail))) // own field; see Head
	i := t & r.pmask
	k := min(uint64(n), r.free(t, uint64(n)), uint64(len(r.pbuf))-i)
	r.reserved = k
	return r.pbuf[i : i+k : i+k]
}

// Claim returns the free slot at the tail for the producer to fill in
// place, or nil if the ring is full: Reserve(1) for one element, small
// enough to inline. Commit(1) publishes the slot. Producer only.
//
// Its room check is TryPush's, spelled out rather than a call to free: a
// generic method inlined into another reloads the caller's dictionary (see
// Peek).
func (r *SPSC[T]) Claim() *T {
	t := atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.tail))) // own field; see Head
	if t-r.cachedHead >= uint64(len(r.pbuf)) {
		// Acquire: see free.
		r.cachedHead = r.head.Load()
		if t-r.cachedHead >= uint64(len(r.pbuf)) {
			r.reserved = 0 // like Reserve, replaces an earlier reservation
			return nil
		}
	}
	r.reserved = 1
	return &r.pbuf[t&r.pmask]
}

// Commit publishes the first k slots of the last reservation. Committing more
// than was reserved is a programming error and panics. Producer only.
func (r *SPSC[T]) Commit(k int) {
	if uint64(k) > r.reserved { // a negative k wraps above any reservation
		panic(misuse{"Commit", k, r.reserved})
	}
	r.reserved = 0
	if k > 0 {
		t := atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.tail))) // own field; see Head
		if plainRelease {
			*(*uint64)(unsafe.Pointer(&r.tail)) = t + uint64(k) // storeRelease (see release.go)
		} else {
			storeRelease(&r.tail, t+uint64(k))
		}
	}
}

// avail returns how many published elements the consumer may read at ticket
// h, reloading tail only when the cached copy says fewer than want.
func (r *SPSC[T]) avail(h uint64, want uint64) uint64 {
	a := r.cachedTail - h
	if a < want {
		// Acquire: observing the producer's store of tail makes its slot
		// writes happen before our reads.
		r.cachedTail = r.tail.Load()
		a = r.cachedTail - h
	}
	return a
}

// TryPop removes and returns the oldest element; ok is false if the ring is
// empty. Consumer only.
//
// The fast path is small enough to inline into the caller; keep it so.
func (r *SPSC[T]) TryPop() (v T, ok bool) {
	h := atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.head))) // not r.head.Load(): see Head
	if h == r.cachedTail {
		// Acquire: see avail.
		r.cachedTail = r.tail.Load()
		if h == r.cachedTail {
			return v, false
		}
	}
	s := &r.cbuf[h&r.cmask]
	v = *s
	if r.pointers {
		var zero T
		*s = zero // drop references so the ring does not pin garbage
	}
	// release: our read of the slot precedes its reuse
	if plainRelease {
		*(*uint64)(unsafe.Pointer(&r.head)) = h + 1 // storeRelease, spelled out (see release.go)
	} else {
		storeRelease(&r.head, h+1)
	}
	return v, true
}

// Drop removes the oldest element without copying it out and reports
// whether there was one. After Peek it consumes the element Peek returned:
// a consumer that read the front in place through Peek drops it here for
// less than TryPop's copy and Advance's checks. It ends any peek: an
// Advance after it panics until the next Peek or PeekN. Consumer only.
func (r *SPSC[T]) Drop() bool {
	h := atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.head))) // not r.head.Load(): see Head
	if h == r.cachedTail {
		// Acquire: see avail.
		r.cachedTail = r.tail.Load()
		if h == r.cachedTail {
			return false
		}
	}
	if r.pointers {
		var zero T
		r.cbuf[h&r.cmask] = zero // drop references so the ring does not pin garbage
	}
	r.peeked = 0
	// release: our read of the slot precedes its reuse
	if plainRelease {
		*(*uint64)(unsafe.Pointer(&r.head)) = h + 1 // storeRelease, spelled out (see release.go)
	} else {
		storeRelease(&r.head, h+1)
	}
	return true
}

// TryPopN moves up to len(dst) of the oldest elements into dst and returns how
// many it moved. Consumer only.
func (r *SPSC[T]) TryPopN(dst []T) int {
	h := r.head.Load()
	n := min(uint64(len(dst)), r.avail(h, uint64(len(dst))))
	if n == 0 {
		return 0
	}
	i := h & r.cmask
	k := copy(dst[:n], r.cbuf[i:])
	rest := n - uint64(k)
	copy(dst[k:n], r.cbuf[:rest])
	if r.pointers {
		clear(r.cbuf[i : i+uint64(k)])
		clear(r.cbuf[:rest])
	}
	storeRelease(&r.head, h+n)
	return int(n)
}

// Peek returns a pointer to the oldest element without consuming it, or nil
// if the ring is empty. The pointer stays valid until Advance. Consumer only.
func (r *SPSC[T]) Peek() *T {
	h := atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.head))) // not r.head.Load(): see Head
	// avail(h, 1), spelled out: a generic method inlined into another
	// reloads and nil-checks the caller's dictionary.
	if h == r.cachedTail {
		// Acquire: see avail.
		r.cachedTail = r.tail.Load()
		if h == r.cachedTail {
			return nil
		}
	}
	r.peeked = 1
	return &r.cbuf[h&r.cmask]
}

// PeekN returns up to n of the oldest elements in place, as one contiguous
// slice (fewer than n when fewer are published or the run wraps), without
// consuming them. The slice stays valid until Advance. Consumer only.
func (r *SPSC[T]) PeekN(n int) []T {
	if n <= 0 {
		return nil
	}
	h := r.head.Load()
	i := h & r.cmask
	k := min(uint64(n), r.avail(h, uint64(n)), uint64(len(r.cbuf))-i)
	r.peeked = k
	return r.cbuf[i : i+k : i+k]
}

// Advance consumes the k oldest elements, which the consumer has read in
// place through Peek or PeekN. Advancing past what was peeked is a
// programming error and panics. Consumer only.
func (r *SPSC[T]) Advance(k int) {
	if uint64(k) > r.peeked { // a negative k wraps above any peek
		panic(misuse{"Advance", k, r.peeked})
	}
	r.peeked = 0
	if k == 0 {
		return
	}
	h := r.head.Load()
	i := h & r.cmask
	if r.pointers {
		clear(r.cbuf[i : i+uint64(k)]) // peeked runs never wrap
	}
	if plainRelease {
		*(*uint64)(unsafe.Pointer(&r.head)) = h + uint64(k) // storeRelease (see release.go)
	} else {
		storeRelease(&r.head, h+uint64(k))
	}
}

// This fails to compile unless atomic.Uint64 is exactly its uint64 (see
// Head), as the plain release stores also assume.
var _ = [1]struct{}{}[unsafe.Sizeof(atomic.Uint64{})-8]

// misuse is the panic value of a Commit or Advance past what was reserved
// or peeked. A value rather than a formatted string keeps the check cheap
// enough for the methods to inline.
type misuse struct {
	method string
	k      int
	limit  uint64
}

func (m misuse) Error() string {
	what := "reservation of"
	if m.method == "Advance" {
		what = "peeked elements:"
	}
	return fmt.Sprintf("ringbuf: %s(%d) exceeds the %s %d", m.method, m.k, what, m.limit)
}

// Footprint calls see with the ring's two header lines, the consumer's and
// the producer's: what every push and pop reads, at fixed addresses (unlike
// the slots, which move with the tickets). It is for callers that prefetch
// the state they are about to use; it reads nothing shared.
func (r *SPSC[T]) Footprint(see func(p unsafe.Pointer, size uintptr)) {
	see(unsafe.Pointer(&r.head), unsafe.Offsetof(r.pointers)+1)
	see(unsafe.Pointer(&r.tail), unsafe.Offsetof(r.pmask)+8-unsafe.Offsetof(r.tail))
}
