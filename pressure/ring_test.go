package pressure

import "sync/atomic"

// ring is a minimal single-producer single-consumer queue for the tests and
// benchmarks of this package (pressure has no dependency on ringbuf).
type ring struct {
	_    [cacheLine]byte
	head atomic.Uint64 // next ticket to pop; written by the consumer
	_    [cacheLine]byte
	tail atomic.Uint64 // next ticket to push; written by the producer
	_    [cacheLine]byte
	buf  []uint64
	mask uint64
}

func newRing(capacity int) *ring {
	return &ring{buf: make([]uint64, capacity), mask: uint64(capacity - 1)}
}

func (r *ring) push(v uint64) bool {
	t := r.tail.Load()
	if t-r.head.Load() == uint64(len(r.buf)) {
		return false
	}
	r.buf[t&r.mask] = v
	r.tail.Store(t + 1)
	return true
}

func (r *ring) pop() (uint64, bool) {
	h := r.head.Load()
	if h == r.tail.Load() {
		return 0, false
	}
	v := r.buf[h&r.mask]
	r.head.Store(h + 1)
	return v, true
}

// popN pops up to len(dst) items.
func (r *ring) popN(dst []uint64) int {
	h := r.head.Load()
	n := int(min(r.tail.Load()-h, uint64(len(dst))))
	for i := range n {
		dst[i] = r.buf[(h+uint64(i))&r.mask]
	}
	if n > 0 {
		r.head.Store(h + uint64(n))
	}
	return n
}

// pushN pushes a prefix of src and returns its length.
func (r *ring) pushN(src []uint64) int {
	t := r.tail.Load()
	n := int(min(uint64(len(r.buf))-(t-r.head.Load()), uint64(len(src))))
	for i := range n {
		r.buf[(t+uint64(i))&r.mask] = src[i]
	}
	if n > 0 {
		r.tail.Store(t + uint64(n))
	}
	return n
}
