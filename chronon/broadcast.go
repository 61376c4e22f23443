package chronon

import (
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/lanework/lanework/ringbuf"
)

// This file is the shared broadcast transport and the receiver-side
// ingress types that let InPort read it through its ordinary code paths.
//
// A high-fanout delay-1 source (BroadcastFanout or more connections, all
// delay 1 and without capacity) stores each message once, in one payload
// ring per OutPort, instead of once per connection. Every destination
// connection reads the ring through its own cursor: a cache-line-aligned
// head that only that destination writes. The receiving InPort sees the
// cursor as one more lane: a single-connection port reads it through
// ingress, a fan-in port through cursorMerge, both with the (arrive,
// connection id) order, filter, flush and cancel code InPort uses for every
// lane.

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

// reader is one destination connection's view of a shared ring. Only the
// receiving unit touches it.
//
// head, as published in the cursor, is exactly the head the connection's
// own lane would have in the direct transport, so a reader overflows in the
// same cycle a lane would. That includes a fan-in flush: frontier compacts
// a lane in place and moves its first run into a private spill when the
// messages wrap around the ring's end. The shared slots are immutable, so
// flush copies every message it looks at into two private queues instead:
// spill (what frontier's spill would hold) and kept (what frontier would
// keep in its ring, and which therefore still counts against head). pos is
// the next shared slot not yet read or copied; head <= pos.
type reader[T any] struct {
	sh   *shared[T]
	cur  *cursor
	buf  []msg[T]
	mask uint64
	pos  uint64 // next shared slot to read
	head uint64 // the published head
	seen uint64 // the last tail loaded
	lane uint32 // the connection's index in the receiving port
	fix  bool   // slots do not carry lane (a broadcast ring read by a fan-in port)

	spill, kept mqueue[T]
	tmp         msg[T] // a slot with lane set, when fix; flushIf's scratch
}

func newReader[T any](sh *shared[T], i int, lane uint32, fix bool) *reader[T] {
	return &reader[T]{sh: sh, cur: &sh.curs[i], buf: sh.buf, mask: sh.mask, lane: lane, fix: fix}
}

// slot returns the next unread shared slot, or nil.
func (r *reader[T]) slot() *msg[T] {
	if r.pos == r.seen {
		r.seen = r.sh.tail.Load()
		if r.pos == r.seen {
			return nil
		}
	}
	return &r.buf[r.pos&r.mask]
}

// peek returns the connection's front message, or nil. The pointer is valid
// until the next call of advance or flushIf; with fix it points to a
// private copy carrying lane.
func (r *reader[T]) peek() *msg[T] {
	if r.spill.n > 0 {
		return r.spill.front()
	}
	if r.kept.n > 0 {
		return r.kept.front()
	}
	m := r.slot()
	if m == nil || !r.fix {
		return m
	}
	r.tmp = *m
	r.tmp.lane = r.lane
	return &r.tmp
}

// arrive returns the front message's arrive cycle, or ok false: peek
// without the copy.
func (r *reader[T]) arrive() (uint64, bool) {
	switch {
	case r.spill.n > 0:
		return r.spill.front().arrive, true
	case r.kept.n > 0:
		return r.kept.front().arrive, true
	}
	if m := r.slot(); m != nil {
		return m.arrive, true
	}
	return 0, false
}

// take consumes the front message and returns it, with lane set: peek
// and advance without peek's copy into tmp. The front must exist.
func (r *reader[T]) take() msg[T] {
	var m msg[T]
	switch {
	case r.spill.n > 0:
		m = *r.spill.front()
	case r.kept.n > 0:
		m = *r.kept.front()
	default:
		m = r.buf[r.pos&r.mask]
		m.lane = r.lane
	}
	r.advance()
	return m
}

// advance consumes the front message, which peek returned. Its reads of
// the slot are done: the store of head may let the producer reuse it.
func (r *reader[T]) advance() {
	switch {
	case r.spill.n > 0:
		r.spill.pop()
		return // frontier's spill is outside its ring: head does not move
	case r.kept.n > 0:
		r.kept.pop()
	default:
		r.pos++
	}
	r.head++
	r.cur.head.Store(r.head)
}

// flushIf drops the messages for which drop returns true and keeps the
// others in order, mirroring frontier's flushLane on a lane of the ring's
// size (see reader).
func (r *reader[T]) flushIf(drop func(arrive uint64, m *msg[T]) bool) int {
	n := r.spill.filter(drop)
	t := r.sh.tail.Load()
	r.seen = t
	left := uint64(r.kept.n) + t - r.pos // == t - head: frontier's ring.Len()
	if left == 0 {
		return n
	}
	run := uint64(len(r.buf)) - r.head&r.mask // frontier's first contiguous run
	if run >= left {
		run = 0 // no wrap: everything is compacted in place
	}
	var dropped uint64
	old := r.kept.n
	m := &r.tmp // drop sees a pointer: a local would escape, once per message
	for i := uint64(0); i < left; i++ {
		if i < uint64(old) {
			*m = *r.kept.front()
			r.kept.pop()
		} else {
			*m = r.buf[r.pos&r.mask]
			m.lane = r.lane
			r.pos++
		}
		switch {
		case drop(m.arrive, m):
			n++
			if i >= run {
				dropped++
			}
		case i < run:
			r.spill.push(*m)
		default:
			r.kept.push(*m)
		}
	}
	*m = msg[T]{}
	if run+dropped > 0 {
		r.head += run + dropped
		r.cur.head.Store(r.head)
	}
	return n
}

// mqueue is a receiver-private FIFO of messages that grows on demand (only
// flushes push to it, and it keeps its capacity).
type mqueue[T any] struct {
	buf  []msg[T]
	h, n int
}

func (q *mqueue[T]) front() *msg[T] { return &q.buf[q.h] }

func (q *mqueue[T]) pop() {
	q.buf[q.h] = msg[T]{}
	q.h = (q.h + 1) & (len(q.buf) - 1)
	q.n--
}

func (q *mqueue[T]) push(m msg[T]) {
	if q.n == len(q.buf) {
		nb := make([]msg[T], max(16, 2*len(q.buf)))
		for i := range q.n {
			nb[i] = q.buf[(q.h+i)&(len(q.buf)-1)]
		}
		q.buf, q.h = nb, 0
	}
	q.buf[(q.h+q.n)&(len(q.buf)-1)] = m
	q.n++
}

// filter drops the messages for which drop returns true, in order.
func (q *mqueue[T]) filter(drop func(arrive uint64, m *msg[T]) bool) int {
	if q.n == 0 {
		return 0
	}
	mask := len(q.buf) - 1
	w := 0
	for i := range q.n {
		p := &q.buf[(q.h+i)&mask]
		if drop(p.arrive, p) {
			continue
		}
		q.buf[(q.h+w)&mask] = *p
		w++
	}
	for i := w; i < q.n; i++ {
		q.buf[(q.h+i)&mask] = msg[T]{}
	}
	d := q.n - w
	q.n = w
	return d
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

// cursorMerge merges readers in (arrive, connection id) order, the order
// frontier.Merger gives (connection ids are unique). It scans every reader:
// O(lanes) per selection, like frontier's scan mode below 32 lanes.
type cursorMerge[T any] struct {
	srcs []*reader[T] // by connection id
}

// min returns the reader with the smallest head, or nil.
func (m *cursorMerge[T]) min() (*reader[T], uint64) {
	var best *reader[T]
	var ba uint64
	for _, r := range m.srcs {
		if a, ok := r.arrive(); ok && (best == nil || a < ba) {
			best, ba = r, a
		}
	}
	return best, ba
}

func (m *cursorMerge[T]) TryPop(c uint64) (msg[T], uint64, bool) {
	r, a := m.min()
	if r == nil || a > c {
		return msg[T]{}, 0, false
	}
	return r.take(), a, true
}

func (m *cursorMerge[T]) PopFiltered(c uint64, keep func(uint64, *msg[T]) bool) (msg[T], uint64, bool) {
	for {
		r, a := m.min()
		if r == nil || a > c {
			return msg[T]{}, 0, false
		}
		p := r.peek()
		if keep(a, p) {
			v := *p
			r.advance()
			return v, a, true
		}
		r.advance()
	}
}

func (m *cursorMerge[T]) HasReady(c uint64) bool {
	r, a := m.min()
	return r != nil && a <= c
}

func (m *cursorMerge[T]) FlushIf(drop func(uint64, *msg[T]) bool) int {
	n := 0
	for _, r := range m.srcs {
		n += r.flushIf(drop)
	}
	return n
}

// pow2 returns the smallest power of two >= n (n >= 1).
func pow2(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}
