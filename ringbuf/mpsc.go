package ringbuf

import (
	"sync/atomic"
)

// MPSC is a bounded multi-producer single-consumer ring.
//
// Any number of goroutines may call TryPush and TryPushN concurrently; exactly
// one goroutine may call the consumer methods (TryPop, TryPopN). Each
// successful push claims tickets from one shared counter, and the consumer
// sees elements in ticket order, so a ticket is also the element's position in
// the global order. Tickets start at 0.
//
// Producers never wait for one another: a producer claims its tickets with a
// compare-and-swap on the shared tail and then publishes each slot through
// that slot's own sequence number. A producer that is descheduled between
// claim and publication holds up only the consumer, and only from that ticket
// on; TryPop then returns false at once instead of spinning, so a caller's
// yield or park lets the descheduled producer run. This keeps the ring usable
// when producers outnumber the Ps that could run them.
//
// The zero value is not usable; create rings with NewMPSC.
type MPSC[T any] struct {
	slots    []mpscSlot[T]
	mask     uint64
	pointers bool // T holds pointers: consumed slots are cleared
	_        [cacheLinePad - 40]byte

	// Producer-written line. tail is the next unclaimed ticket. headCache
	// is a shared, possibly stale, copy of head: producers reload head
	// only when it says the ring is full, so a consumer's pops do not
	// bounce the head line into every producer on every push.
	tail      atomic.Uint64
	headCache atomic.Uint64
	_         [cacheLinePad - 16]byte

	// Consumer-written line: head is the next ticket to read.
	head atomic.Uint64
	_    [cacheLinePad - 8]byte
}

// mpscSlot holds one element. seq == ticket+1 means the element for ticket
// has been published and not yet consumed.
type mpscSlot[T any] struct {
	seq atomic.Uint64
	val T
}

// NewMPSC returns an empty ring with room for capacity elements, rounded up
// to a power of two. It returns ErrCapacity if capacity is below 1 or above
// MaxCapacity.
func NewMPSC[T any](capacity int) (*MPSC[T], error) {
	c, err := roundCapacity(capacity)
	if err != nil {
		return nil, err
	}
	q := &MPSC[T]{slots: make([]mpscSlot[T], c), mask: c - 1, pointers: hasPointers[T]()}
	q.setTickets(0)
	return q, nil
}

// setTickets moves an empty, unused ring's tickets to start. Each slot's
// sequence is set to what its last lap would have left (ticket-Cap+1), a value
// that never equals the ticket+1 the consumer waits for; this holds across
// the 2^64 wrap too.
func (q *MPSC[T]) setTickets(start uint64) {
	c := uint64(len(q.slots))
	for t := start; t != start+c; t++ {
		q.slots[t&q.mask].seq.Store(t - c + 1)
	}
	q.head.Store(start)
	q.headCache.Store(start)
	q.tail.Store(start)
}

// Cap returns the number of slots.
func (q *MPSC[T]) Cap() int { return len(q.slots) }

// Len returns the number of claimed, unconsumed elements (including claims
// whose producer has not yet published). It is a snapshot.
func (q *MPSC[T]) Len() int {
	h := q.head.Load()
	t := q.tail.Load()
	n := t - h
	if n > uint64(len(q.slots)) {
		return 0
	}
	return int(n)
}

// Tail returns the next unclaimed ticket: every ticket below it is claimed,
// and its push publishes it without waiting for anything (a claim cannot
// fail afterwards). A producer that needs "how far have pushes gone" can
// read it instead of keeping a shared maximum of its own. It is a snapshot.
func (q *MPSC[T]) Tail() uint64 { return q.tail.Load() }

// claim reserves n contiguous tickets, or reports false if they do not fit.
func (q *MPSC[T]) claim(n uint64) (uint64, bool) {
	size := uint64(len(q.slots))
	if n == 0 || n > size {
		return 0, false
	}
	for {
		t := q.tail.Load()
		if t+n-q.headCache.Load() > size {
			// Slot t+i was last used by ticket t+i-size, which is below
			// head once t+n-head <= size. Loading head synchronizes with
			// the consumer's store after it read and cleared that slot.
			// headCache carries that edge to other producers: a stale
			// (smaller) value is only conservative.
			h := q.head.Load()
			q.headCache.Store(h)
			if t+n-h > size {
				// t may be stale (and even behind h): it is a real
				// "full" only if tail still equals t, because then the
				// ring held t-h elements when h was loaded.
				if q.tail.Load() != t {
					continue
				}
				return 0, false
			}
		}
		if q.tail.CompareAndSwap(t, t+n) {
			return t, true
		}
	}
}

// TryPush appends v and returns its ticket; ok is false, at once, if the ring
// is full. Safe for concurrent producers.
func (q *MPSC[T]) TryPush(v T) (ticket uint64, ok bool) {
	t, ok := q.claim(1)
	if !ok {
		return 0, false
	}
	s := &q.slots[t&q.mask]
	s.val = v
	storeRelease(&s.seq, t+1) // release: publishes val
	return t, true
}

// TryPushN appends all of src under len(src) contiguous tickets, first through
// first+len(src)-1, or nothing: ok is false if src is empty, longer than Cap,
// or does not fit now. Safe for concurrent producers.
func (q *MPSC[T]) TryPushN(src []T) (first uint64, ok bool) {
	t, ok := q.claim(uint64(len(src)))
	if !ok {
		return 0, false
	}
	for i := range src {
		tk := t + uint64(i)
		s := &q.slots[tk&q.mask]
		s.val = src[i]
		storeRelease(&s.seq, tk+1)
	}
	return t, true
}

// TryPop removes the element with the oldest ticket and returns it with its
// ticket; ok is false if that element is not published yet (the ring is
// empty, or its producer is between claim and publication). Consumer only.
func (q *MPSC[T]) TryPop() (v T, ticket uint64, ok bool) {
	h := q.head.Load()
	s := &q.slots[h&q.mask]
	if s.seq.Load() != h+1 { // acquire: pairs with the producer's publication
		return v, 0, false
	}
	v = s.val
	if q.pointers {
		var zero T
		s.val = zero // drop references so the ring does not pin garbage
	}
	storeRelease(&q.head, h+1) // release: the slot may be claimed again
	return v, h, true
}

// TryPopN moves the longest published run of oldest elements, up to len(dst),
// into dst. It returns the ticket of dst[0] and how many it moved. Consumer
// only.
func (q *MPSC[T]) TryPopN(dst []T) (first uint64, n int) {
	h := q.head.Load()
	var zero T
	for n < len(dst) {
		tk := h + uint64(n)
		s := &q.slots[tk&q.mask]
		if s.seq.Load() != tk+1 {
			break
		}
		dst[n] = s.val
		if q.pointers {
			s.val = zero
		}
		n++
	}
	if n > 0 {
		storeRelease(&q.head, h+uint64(n))
	}
	return h, n
}
