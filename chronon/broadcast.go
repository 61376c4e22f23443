package chronon

import (
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/lanework/lanework/ringbuf"
)

// This file is the shared broadcast transport and the receiver-side
// ingress type that lets InPort read it through its ordinary code paths.
//
// A high-fanout delay-1 source (BroadcastFanout or more connections, all
// delay 1 and without capacity) stores each message once, in one payload
// ring per OutPort, for every destination that is a single-connection
// InPort, instead of once per connection. Each such destination reads the
// ring through its own cursor: a cache-line-aligned head that only that
// destination writes, read by InPort through ingress with the filter,
// flush and cancel code it uses for every lane. A destination with several
// connections (a fan-in) keeps its own lane: every fan-in merges through
// frontier, the one merge implementation.

// BroadcastFanout is the smallest fanout that uses the shared broadcast
// transport (see WithBroadcast).
const BroadcastFanout = 4

// shared is a payload ring with one producer and one cursor per reader.
//
// Memory ordering, in Go memory model terms (every sync/atomic operation is
// sequentially consistent, and an atomic load that observes an atomic store
// is synchronized after it):
//
//   - Publication. The producer writes slot t with plain stores and then
//     stores tail = t+1. A reader that loads tail > t is synchronized after
//     that store, so its plain reads of slot t happen after the writes.
//   - Reuse. A reader makes its last read of a slot before it stores a head
//     past the slot. The producer overwrites slot t (reused as ticket
//     t+size) only after it has loaded, from every cursor, a head > t: each
//     load is synchronized after the reader's store, so every read of the
//     old contents happens before the overwrite. Heads only grow, so a
//     lower bound from an earlier scan (low) stays valid and the producer
//     rescans the cursors only when the ring looks full by it: one pass of
//     loads per size/fanout pushes in the worst case, none while readers
//     keep up.
//   - No other sharing. Readers never write the ring or tail, the producer
//     never writes a cursor; nobody reads receiver filter state. The slots
//     are immutable for readers, so readers on several workers read the
//     same slot concurrently without synchronizing with each other.
//
// A slot is not cleared when every reader is done with it (no reader knows
// it is the last); a pointer in a payload stays reachable until the
// producer reuses the slot.
type shared[T any] struct {
	buf  []msg[T]
	mask uint64
	curs []cursor // one per reader; the slice is immutable after Build
	name []string // the connection of each cursor, for overflow reports

	_    [cacheLine]byte
	tail atomic.Uint64 // published: slots below tail are written

	_ [cacheLine - 8]byte
	// Producer-private.
	next uint64 // the next ticket; tail's value without the load
	low  uint64 // a lower bound of every cursor's head
	_    [cacheLine - 16]byte
}

// cursor is a reader's head: the ticket of its next unconsumed message as
// the producer must see it. It fills a cache line of its own.
type cursor struct {
	head atomic.Uint64
	_    [cacheLine - 8]byte
}

// newShared returns a ring of size slots (a power of two) with n cursors
// named by conns.
func newShared[T any](size int, conns []string) *shared[T] {
	return &shared[T]{buf: make([]msg[T], size), mask: uint64(size - 1), curs: newCursors(len(conns)), name: conns}
}

// newCursors returns n cursors whose first starts a cache line. The heap
// does not move objects, so the alignment holds for the slice's lifetime.
func newCursors(n int) []cursor {
	raw := make([]cursor, n+1)
	p := unsafe.Pointer(&raw[0])
	off := (cacheLine - uintptr(p)%cacheLine) % cacheLine
	return unsafe.Slice((*cursor)(unsafe.Add(p, off)), n)
}

// put publishes m and returns -1, or, when some reader has a full ring's
// worth of messages unconsumed, the index of the first such cursor; then
// nothing is written.
func (s *shared[T]) put(m *msg[T]) int {
	t := s.next
	if t-s.low >= uint64(len(s.buf)) {
		if i := s.scan(t); i >= 0 {
			return i
		}
	}
	s.buf[t&s.mask] = *m
	s.next = t + 1
	s.tail.Store(t + 1)
	return -1
}

// scan refreshes low from every cursor and returns the first cursor
// without room for ticket t, or -1.
func (s *shared[T]) scan(t uint64) int {
	low, full := t, -1
	for i := range s.curs {
		h := s.curs[i].head.Load()
		if t-h >= uint64(len(s.buf)) && full < 0 {
			full = i
		}
		low = min(low, h)
	}
	s.low = low
	return full
}

// reader is one destination's view of a shared ring. Only the receiving
// unit touches it. head, as published in the cursor, is exactly the head
// the connection's own lane would have in the direct transport, so a reader
// overflows in the same cycle a lane would.
type reader[T any] struct {
	sh   *shared[T]
	cur  *cursor
	buf  []msg[T]
	mask uint64
	head uint64 // the next slot to read, as published
	seen uint64 // the last tail loaded
}

func newReader[T any](sh *shared[T], i int) *reader[T] {
	return &reader[T]{sh: sh, cur: &sh.curs[i], buf: sh.buf, mask: sh.mask}
}

// slot returns the next unread shared slot, or nil.
func (r *reader[T]) slot() *msg[T] {
	if r.head == r.seen {
		r.seen = r.sh.tail.Load()
		if r.head == r.seen {
			return nil
		}
	}
	return &r.buf[r.head&r.mask]
}

// advance consumes the slot that slot returned. Its reads of the slot are
// done: the store of head may let the producer reuse it.
func (r *reader[T]) advance() {
	r.head++
	r.cur.head.Store(r.head)
}

// ingress is a single-connection port's lane: the connection's SPSC ring,
// or its cursor on a shared ring. The branch replaces an interface call on
// the receive path.
type ingress[T any] struct {
	ring *ringbuf.SPSC[msg[T]]
	rd   *reader[T]
}

// Peek returns the front message in place, or nil.
func (l *ingress[T]) Peek() *msg[T] {
	if l.rd != nil {
		return l.rd.slot()
	}
	return l.ring.Peek()
}

// Advance consumes the front message, which Peek returned.
func (l *ingress[T]) Advance() {
	if l.rd != nil {
		l.rd.advance()
		return
	}
	l.ring.Advance(1)
}

// Cap returns the lane's depth.
func (l *ingress[T]) Cap() int {
	if l.rd != nil {
		return len(l.rd.buf)
	}
	return l.ring.Cap()
}

// pow2 returns the smallest power of two >= n (n >= 1).
func pow2(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}
