package wire

import (
	"errors"
	"math/bits"
	"sync"
)

// SmallFrame is the largest body a FrameReader reads into the buffer it
// keeps. A larger body is read into a buffer lent by a FrameBuffers and
// given back by FrameReader.Release, so a connection that once sent a
// large frame does not keep its memory.
const SmallFrame = 4 << 10

// ErrCanceled is returned by FrameReader.Next when its Cancel channel
// closed while it waited for FrameBuffers budget.
var ErrCanceled = errors.New("wire: canceled waiting for frame memory")

// FrameBuffers lends the buffers of large frame bodies, from pools by
// power-of-two size, within a budget of bytes lent at once: a reader over
// the budget waits (first come, first served) until others give theirs
// back. It is safe for concurrent use.
type FrameBuffers struct {
	limit int64 // <= 0: no limit

	mu      sync.Mutex
	lent    int64
	waiters []*bufWaiter // FIFO

	pools [64]sync.Pool // by log2 of the size; elements are *[]byte
}

type bufWaiter struct {
	n     int64
	ready chan struct{} // closed when the bytes were granted
}

// NewFrameBuffers returns buffers with a budget of limit bytes lent at
// once (<= 0: unlimited). A single frame larger than the budget is still
// served, alone.
func NewFrameBuffers(limit int64) *FrameBuffers { return &FrameBuffers{limit: limit} }

// defaultBuffers serves readers without their own FrameBuffers (clients).
var defaultBuffers = NewFrameBuffers(0)

// Lent returns the bytes lent and not yet given back.
func (fb *FrameBuffers) Lent() int64 {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return fb.lent
}

// get lends a buffer of length n, waiting for budget until cancel closes.
func (fb *FrameBuffers) get(n int, cancel <-chan struct{}) ([]byte, error) {
	class := bits.Len(uint(n - 1))
	size := int64(1) << class
	if err := fb.acquire(fb.grant(size), cancel); err != nil {
		return nil, err
	}
	if p, ok := fb.pools[class].Get().(*[]byte); ok {
		return (*p)[:n], nil
	}
	return make([]byte, n, size), nil
}

// put gives back a buffer lent by get.
func (fb *FrameBuffers) put(b []byte) {
	class := bits.Len(uint(cap(b) - 1))
	fb.release(fb.grant(int64(cap(b))))
	b = b[:0]
	fb.pools[class].Put(&b)
}

// grant is the budget a buffer of size takes: at most the whole budget.
func (fb *FrameBuffers) grant(size int64) int64 {
	if fb.limit > 0 && size > fb.limit {
		return fb.limit
	}
	return size
}

func (fb *FrameBuffers) acquire(n int64, cancel <-chan struct{}) error {
	fb.mu.Lock()
	if fb.limit <= 0 || (len(fb.waiters) == 0 && fb.lent+n <= fb.limit) {
		fb.lent += n
		fb.mu.Unlock()
		return nil
	}
	w := &bufWaiter{n: n, ready: make(chan struct{})}
	fb.waiters = append(fb.waiters, w)
	fb.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-cancel:
		fb.mu.Lock()
		select {
		case <-w.ready: // granted as we gave up: give it back
			fb.mu.Unlock()
			fb.release(n)
			return ErrCanceled
		default:
		}
		for i, x := range fb.waiters {
			if x == w {
				fb.waiters = append(fb.waiters[:i], fb.waiters[i+1:]...)
				break
			}
		}
		fb.wakeLocked() // the head may have changed
		fb.mu.Unlock()
		return ErrCanceled
	}
}

func (fb *FrameBuffers) release(n int64) {
	fb.mu.Lock()
	fb.lent -= n
	fb.wakeLocked()
	fb.mu.Unlock()
}

// wakeLocked grants waiters in order while the budget allows.
func (fb *FrameBuffers) wakeLocked() {
	for len(fb.waiters) > 0 {
		w := fb.waiters[0]
		if fb.lent+w.n > fb.limit {
			return
		}
		fb.lent += w.n
		close(w.ready)
		fb.waiters[0] = nil
		fb.waiters = fb.waiters[1:]
	}
}
