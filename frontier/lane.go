package frontier

import (
	"sync/atomic"
	"unsafe"

	"github.com/lanework/lanework/ringbuf"
)

// A Lane is one producer's ingress into a Merger: a bounded SPSC ring that
// only its producer writes and only the merger's consumer reads.
//
// Lanes are created by Merger.AddLane.
type Lane[T any] struct {
	ring *ringbuf.SPSC[item[T]]
	// word and bit locate the lane's notification bit; word is nil while
	// the merger scans (fewer than heapThreshold lanes).
	word    *atomic.Uint64
	bit     uint64
	started *atomic.Bool // the merger's; set by the first push
	pushed  bool         // producer-private: started has been set
	id      int
	connID  uint64

	overflows atomic.Uint64 // written by the producer only
}

// TryPush appends a message arriving at cycle arrive and reports whether the
// lane had room. A full lane returns false at once and counts one overflow
// (see Merger.Overflows); waiting or dropping is the caller's policy.
//
// TryPush may be called by one producer goroutine at a time.
func (l *Lane[T]) TryPush(arrive uint64, v T) bool {
	if !l.pushed {
		l.pushed = true
		l.started.Store(true)
	}
	if !l.ring.TryPush(item[T]{arrive: arrive, v: v}) {
		l.overflows.Add(1)
		return false
	}
	if l.word != nil {
		// After the ring's store of its tail, in program order: a
		// consumer whose Swap observes this Or is synchronized after it
		// and so sees the new message (see Merger.refresh).
		l.word.Or(l.bit)
	}
	return true
}

// ID returns the lane's registration index: 0 for the first lane added to
// its merger, 1 for the second, and so on. It breaks ties between lanes
// with the same connection id.
func (l *Lane[T]) ID() int { return l.id }

// ConnID returns the connection id the lane was registered with.
func (l *Lane[T]) ConnID() uint64 { return l.connID }

// Cap returns the number of messages the lane can hold.
func (l *Lane[T]) Cap() int { return l.ring.Cap() }

// Footprint calls see with the memory at fixed addresses that a push
// touches: the lane and its ring's header (see ringbuf.SPSC.Footprint).
func (l *Lane[T]) Footprint(see func(p unsafe.Pointer, size uintptr)) {
	see(unsafe.Pointer(l), unsafe.Sizeof(*l))
	l.ring.Footprint(see)
}
