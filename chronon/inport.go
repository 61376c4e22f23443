package chronon

import (
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/lanework/lanework/frontier"
)

// InPort is the receiving end of connections carrying messages of type T.
// Declare it as a field of the unit struct; the zero value is ready for
// Simulation.Add. Only the owning unit's Tick may call its methods.
//
// A message is ready once its arrive cycle is at most the owner's local
// cycle. Messages of one connection are received in send order; messages of
// several connections in (arrive, connection id) order.
type InPort[T any] struct {
	// What a receive reads comes first: a unit's ports are per-unit
	// working set, which sets the cost per unit-cycle of a large model.
	// A fan-in receive reads the first 64 bytes; a single connection's,
	// u, idle, one and the 48 bytes from ring.
	u *unitState
	// idle is a cycle before which no message can be ready (see receive);
	// gap is the fewest cycles from a receive attempt that finds a
	// connection empty to the arrival of its next message (see setGap).
	idle  uint64
	one   *conn[T]                  // the connection of a single-connection port
	merge *frontier.Merger[lmsg[T]] // fan-in ports
	conns []*conn[T]
	gap   uint64
	ring  ingress[T] // the connection's lane of a single-connection port
	front []msg[T]   // survivors of a selective flush, older than anything in ring
	fhead int
	name  string

	// waits says a connection's producer runs on another worker of the
	// lookahead engine, which Flush waits for (see flush).
	waits bool

	// Callbacks for merge, made once at Build so calls do not allocate.
	keepFn  func(uint64, *lmsg[T]) bool
	flushFn func(uint64, *lmsg[T]) bool
	keep    func(*T) bool // the current ReceiveFiltered predicate
	got     T             // the message keepMerged accepted, until receive copies it out
	fkey    func(*T) uint64
	frange  Range
	fall    bool // the current flush drops every covered message
}

// TryReceive returns the next ready message, if any.
func (p *InPort[T]) TryReceive() (v T, ok bool) {
	ok = p.TryReceiveInto(&v)
	return v, ok
}

// TryReceiveInto is TryReceive writing the message to *dst, which it leaves
// alone when nothing is ready. The message is copied once, from the lane
// slot to dst, instead of through return values.
func (p *InPort[T]) TryReceiveInto(dst *T) bool {
	c := p.u.cycle
	if c < p.idle {
		return false
	}
	// Fast path: one lane (an SPSC ring or a broadcast cursor), no flush
	// survivors, head not cancelled.
	if k := p.one; k != nil && p.fhead == len(p.front) {
		r, rd := p.ring.ring, p.ring.rd
		var m *msg[T]
		if r != nil {
			m = r.Peek()
		} else {
			m = rd.slot()
		}
		if p.notReady(m, c) {
			return false
		}
		if !k.cut.stale(m.epoch, c) {
			switch {
			case rd != nil:
				*dst = m.v
				rd.advance()
			case wide[T](): // in place (see wide)
				*dst = m.v
				r.Advance(1)
			default: // TryPop clears a slot holding pointers inline, Advance with a call
				popped, _ := r.TryPop()
				*dst = popped.v
			}
			k.credit(c)
			return true
		}
	}
	return p.receive(dst, nil)
}

// ReceiveFiltered returns the next ready message for which keep returns
// true. Ready messages that keep rejects are consumed for good (and free
// their capacity). keep runs on the receiver; it must not retain v.
func (p *InPort[T]) ReceiveFiltered(keep func(v *T) bool) (v T, ok bool) {
	if p.u.cycle < p.idle {
		return v, false
	}
	ok = p.receive(&v, keep)
	return v, ok
}

// Ready reports whether a message is ready. It may report true for a
// message that a pending cancel will discard.
func (p *InPort[T]) Ready() bool {
	c := p.u.cycle
	switch {
	case c < p.idle:
		return false
	case p.one != nil:
		if p.fhead < len(p.front) {
			return p.front[p.fhead].arrive <= c
		}
		h := p.ring.Peek()
		return h != nil && h.arrive <= c
	case p.merge != nil:
		return !p.drained() && p.merge.HasReady(c)
	}
	return false
}

// notReady reports whether the lane head m (nil: the lane is empty) is not
// ready in cycle c, and if so records in idle the first cycle it or a later
// push can be (see receive).
func (p *InPort[T]) notReady(m *msg[T], c uint64) bool {
	switch {
	case m == nil:
		p.idle = c + p.gap
		return true
	case m.arrive > c:
		p.idle = m.arrive
		return true
	}
	return false
}

// receive is the general receive: fan-in, flush survivors, cancelled heads,
// a filter, broadcast cursors. It writes the message to *dst.
//
// It maintains idle, the earliest cycle in which a message can be ready:
// when it finds none ready in cycle c, a message it has seen arrives no
// sooner than its head's arrive, and any message not yet seen is pushed in
// cycle c or later (a zero-delay producer has already ticked in c; under
// the parallel engine every push of earlier cycles is visible), so it
// arrives no sooner than c+gap. Flushes and cancels only remove messages,
// so idle stays a lower bound until it passes.
func (p *InPort[T]) receive(dst *T, keep func(*T) bool) bool {
	c := p.u.cycle
	k := p.one
	if k == nil {
		if p.merge == nil {
			return false
		}
		if p.drained() {
			p.idle = c + p.gap
			return false
		}
		if keep == nil && !wide[T]() {
			for { // by value, checking cancellation afterwards
				m, _, ok := p.merge.TryPop(c)
				if !ok {
					p.idle = c + 1
					return false
				}
				k := p.conns[m.lane]
				k.credit(c)
				if !k.cut.stale(m.epoch, c) {
					*dst = m.v
					return true
				}
			}
		}
		// A wide message goes through the filtered pop even without a
		// filter: keepMerged copies it from its lane slot to got, where a
		// returned one would be stored and copied again (see wide).
		p.keep = keep
		var ok bool
		_, _, ok = p.merge.PopFiltered(c, p.keepFn)
		p.keep = nil
		if !ok {
			p.idle = c + 1
			return false
		}
		var zero T
		*dst, p.got = p.got, zero // got must not keep a payload reachable
		return true
	}
	for p.fhead < len(p.front) {
		m := &p.front[p.fhead]
		if m.arrive > c {
			p.idle = m.arrive
			return false
		}
		ok := !k.cut.stale(m.epoch, c) && (keep == nil || keep(&m.v))
		if ok {
			*dst = m.v
		}
		*m = msg[T]{}
		p.fhead++
		if p.fhead == len(p.front) {
			p.front, p.fhead = p.front[:0], 0
		}
		k.credit(c)
		if ok {
			return true
		}
	}
	for {
		m := p.ring.Peek()
		if p.notReady(m, c) {
			return false
		}
		ok := !k.cut.stale(m.epoch, c) && (keep == nil || keep(&m.v))
		if ok {
			*dst = m.v
		}
		p.ring.Advance()
		k.credit(c)
		if ok {
			return true
		}
	}
}

// drained reports whether every message pushed to the port has been
// consumed, from the connections' ledgers: a few loads instead of a scan of
// the merge's lanes. Across workers it reads the published push counts: a
// push it misses is one of the current cycle, which is neither ready nor
// covered by a flush.
func (p *InPort[T]) drained() bool {
	for _, k := range p.conns {
		if k.pushed() != k.pops {
			return false
		}
	}
	return true
}

// keepMerged is the merge filter: it credits every consumed message,
// applies cancellation and the caller's predicate, and copies the message
// it accepts to got.
func (p *InPort[T]) keepMerged(_ uint64, m *lmsg[T]) bool {
	c := p.u.cycle
	k := p.conns[m.lane]
	k.credit(c)
	if k.cut.stale(m.epoch, c) || p.keep != nil && !p.keep(&m.v) {
		return false
	}
	p.got = m.v
	return true
}

// Flush discards every message sent to the port in earlier cycles (and, on
// a zero-delay connection, in this cycle), ready or still in flight, and
// returns how many it discarded. Messages sent in this cycle on a delayed
// connection are kept whether or not their sender has ticked yet.
func (p *InPort[T]) Flush() int {
	p.fall = true
	n := p.flush()
	p.fall = false
	return n
}

// FlushKeys is Flush restricted to messages whose key lies in r: it
// discards the covered messages v with r.Contains(key(&v)) and keeps the
// others in order.
func (p *InPort[T]) FlushKeys(key func(v *T) uint64, r Range) int {
	p.fkey, p.frange = key, r
	n := p.flush()
	p.fkey = nil
	return n
}

func (p *InPort[T]) dropped(v *T) bool {
	return p.fall || p.frange.Contains(p.fkey(v))
}

// flush discards the covered messages. Under the lookahead engine a
// producer on another worker may not have finished the cycles before c yet
// (it is at least in c-d+1 on a delay-d edge): flush first waits until each
// has, so that what it covers, and the count it returns, are the
// sequential engine's. That wait cannot deadlock: every wait of a worker in
// cycle c, in a Tick or between cycles, is for another worker to finish a
// cycle before c, so along a chain of waiting workers the cycles fall.
func (p *InPort[T]) flush() int {
	c := p.u.cycle
	if p.waits {
		for _, k := range p.conns {
			if q := k.pprog; q != nil && q.Load() < c {
				p.u.await(q, c)
			}
		}
	}
	k := p.one
	if k == nil {
		if p.merge == nil || p.drained() {
			return 0
		}
		return p.merge.FlushIf(p.flushFn)
	}
	n := 0
	// Compact the front in place; it is entirely covered.
	w := p.fhead
	for i := p.fhead; i < len(p.front); i++ {
		if p.dropped(&p.front[i].v) {
			k.credit(c)
			n++
			continue
		}
		p.front[w] = p.front[i]
		w++
	}
	clear(p.front[w:])
	p.front = p.front[:w]
	// Move the covered prefix of the ring: drop matches, keep the rest in
	// the front (the ring's consumer cannot remove from its middle).
	lim := k.limit(c)
	for {
		m := p.ring.Peek()
		if m == nil || m.arrive > lim {
			break
		}
		if p.dropped(&m.v) {
			k.credit(c)
			n++
		} else {
			if p.front == nil {
				p.front = make([]msg[T], 0, p.ring.Cap())
			}
			p.front = append(p.front, *m)
		}
		p.ring.Advance()
	}
	if p.fhead == len(p.front) {
		p.front, p.fhead = p.front[:0], 0
	}
	return n
}

// flushMerged is the merge's flush predicate.
func (p *InPort[T]) flushMerged(arrive uint64, m *lmsg[T]) bool {
	c := p.u.cycle
	k := p.conns[m.lane]
	if arrive > k.limit(c) || !p.dropped(&m.v) {
		return false
	}
	k.credit(c)
	return true
}

// Name returns the port's full name, "unit.port".
func (p *InPort[T]) Name() string { return portName(p.u, p.name) }

// inPortAny is the untyped view of an InPort used while building.
type inPortAny interface {
	bind(u *unitState, name string)
	unit() *unitState
	fullName() string
	localName() string
	elem() reflect.Type
	build() error
	state(see func(p unsafe.Pointer, size uintptr))
	setParallel(groupOf []int, prog []*atomic.Uint64)
	connCount() int
	unboundedConn() string
	forgetIdle()
	nextArrive() uint64
	arm()
	footprint(see func(p unsafe.Pointer, size uintptr))
}

// setGap sets gap: the smallest delay d of the port's connections, at
// least 1, since whatever a receive in cycle c has not seen is pushed in c
// or later. Under the lookahead engine with lookahead L, a producer on
// another worker may still be in cycle c-min(d,L)+1, so on such a
// connection it is d-min(d,L)+1.
func (p *InPort[T]) setGap() {
	p.gap = 0
	for i, k := range p.conns {
		g := max(uint64(k.delay), 1)
		if k.pprog != nil {
			d := uint64(k.delay)
			g = d - min(d, p.u.sim.lookahead) + 1
		}
		if i == 0 || g < p.gap {
			p.gap = g
		}
	}
	p.gap = max(p.gap, 1)
}

// forgetIdle drops the port's idle cycle (for tests: it must change nothing).
func (p *InPort[T]) forgetIdle() { p.idle = 0 }

func (p *InPort[T]) bind(u *unitState, name string) { p.u, p.name = u, name }
func (p *InPort[T]) unit() *unitState               { return p.u }
func (p *InPort[T]) fullName() string               { return p.Name() }
func (p *InPort[T]) localName() string              { return p.name }
func (p *InPort[T]) elem() reflect.Type             { return reflect.TypeFor[T]() }

// footprint calls see with what a receive touches at fixed addresses: the
// port's hot bytes, its merger's or single ring's state, and its
// connections' receiver lines (credit) and the first one's producer line
// (drained).
func (p *InPort[T]) footprint(see func(p unsafe.Pointer, size uintptr)) {
	switch {
	case p.merge != nil:
		see(unsafe.Pointer(p), unsafe.Offsetof(p.gap)+unsafe.Sizeof(p.gap))
		p.merge.Footprint(see)
	case p.ring.ring != nil:
		see(unsafe.Pointer(p), unsafe.Offsetof(p.fhead)+unsafe.Sizeof(p.fhead))
		p.ring.ring.Footprint(see)
	}
	if len(p.conns) == 0 {
		return
	}
	see(unsafe.Pointer(&p.conns[0]), uintptr(len(p.conns))*unsafe.Sizeof(p.conns[0]))
	see(unsafe.Pointer(p.conns[0]), 8)
	for _, k := range p.conns {
		see(unsafe.Pointer(&k.pops), 8) // the line TestConnLayout keeps the receiver's fields on
	}
}
