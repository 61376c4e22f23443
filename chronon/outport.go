package chronon

import (
	"reflect"
	"unsafe"
)

// OutPort is the sending end of a unit's connections for messages of type T.
// Declare it as a field of the unit struct; the zero value is ready for
// Simulation.Add. Only the owning unit's Tick may call its methods.
type OutPort[T any] struct {
	// What Send reads and writes comes first, 40 bytes together: a unit's
	// ports are per-unit working set, which sets the cost per unit-cycle
	// of a large model, and spread over the port's 128 bytes these fields
	// took two lines a port.
	u     *unitState
	conns []*conn[T]
	// epoch counts the port's effective cancels; sent says a message was
	// sent since it last advanced. Both are the owner's; receivers read the
	// log, allocated by Build (see cancel.go).
	epoch    uint32
	sent     bool
	noCancel bool       // the port of a NoCancelOutPort
	bc       *shared[T] // the shared broadcast ring, when Build chose it
	// With bc: the connections with lanes of their own (to fan-in ports),
	// in connection order.
	lanes    []*conn[T]
	log      *cycleLog
	name     string
	reserved []T // messages reserved by a PortTransaction, not yet sent
}

// CanSend reports whether Send would succeed now: every connection has a
// rate slot left in this cycle and room by its admission snapshot. It
// changes nothing.
func (p *OutPort[T]) CanSend() bool {
	c := p.u.cycle
	for _, k := range p.conns {
		if !k.admits(c) {
			return false
		}
	}
	return true
}

// Send sends v on every connection of the port and reports whether it was
// sent. Fanout is all or none: if any connection is out of rate or room,
// nothing is sent and no rate slot is used. An unconnected port accepts and
// discards v.
//
// Send is small enough to inline: v is then the caller's copy, which send
// reads in place.
func (p *OutPort[T]) Send(v T) bool { return p.send(&v) }

func (p *OutPort[T]) send(v *T) bool {
	c := p.u.cycle
	if len(p.conns) == 1 { // the common case, without the second loop
		k := p.conns[0]
		if !k.fits(c) && !k.admitsSlow(c) { // admits, its test inlined
			return false
		}
		k.push(c, p.epoch, v)
		p.sent = true
		return true
	}
	for _, k := range p.conns {
		if !k.admits(c) {
			return false
		}
	}
	p.sent = true
	if b := p.bc; b != nil {
		p.broadcast(b, c, p.epoch, v)
		return true
	}
	for _, k := range p.conns {
		k.push(c, p.epoch, v)
	}
	return true
}

// broadcast is Send's publication with a shared broadcast ring: the
// ledgers of every connection, one payload write for the cursors, a push
// on each lane of its own, then the published counts. The first connection
// in connection order that is full (see conn.full) overflows, as in the
// direct transport, and nothing is written: the run stops at the end of
// the cycle, before any receiver could see the message.
func (p *OutPort[T]) broadcast(b *shared[T], c uint64, e uint32, v *T) {
	for _, k := range p.conns {
		if k.pushes >= k.lim && k.full(c) {
			p.u.sim.overflow(p.u, k.name, c)
			return
		}
	}
	for _, k := range p.conns {
		k.record(c)
	}
	m := msg[T]{arrive: c + 1, epoch: e, v: *v}
	if i := b.put(&m); i >= 0 {
		p.u.sim.overflow(p.u, b.name[i], c) // not reached: full checked the same room
	}
	for _, k := range p.lanes {
		if !k.flane.TryPush(c+1, lmsg[T]{epoch: e, lane: k.lane, v: *v}) {
			p.u.sim.overflow(p.u, k.name, c)
		}
	}
	for _, k := range p.conns {
		k.publish()
	}
}

// CancelInFlight cancels every message sent on the port so far. The cancel
// travels like a message: on a connection with delay d, a cancel in cycle x
// makes the receiver discard, from cycle x+d on, every earlier message it
// has not yet taken. The discards free capacity when the receiver reaches
// them. Any number of cancels per cycle is exact (see cancel.go); a cancel
// with nothing sent since the previous one changes nothing.
func (p *OutPort[T]) CancelInFlight() {
	if !p.sent {
		return // nothing sent since the last cancel: nothing more to cancel
	}
	p.sent = false
	p.epoch++
	if p.log != nil {
		p.log.advance(p.u.cycle, uint64(p.epoch))
	}
}

// Name returns the port's full name, "unit.port".
func (p *OutPort[T]) Name() string { return portName(p.u, p.name) }

// outPortAny is the untyped view of an OutPort used while building.
type outPortAny interface {
	bind(u *unitState, name string)
	unit() *unitState
	fullName() string
	localName() string
	elem() reflect.Type
	connectAny(in inPortAny, cfg connConfig) (*edge, error)
	planBroadcast(on bool)
	buildCancel()
	broadcasting() bool
	payloadBytes() int
	footprint(see func(p unsafe.Pointer, size uintptr))
}

func (p *OutPort[T]) bind(u *unitState, name string) { p.u, p.name = u, name }
func (p *OutPort[T]) unit() *unitState               { return p.u }
func (p *OutPort[T]) fullName() string               { return p.Name() }
func (p *OutPort[T]) localName() string              { return p.name }
func (p *OutPort[T]) elem() reflect.Type             { return reflect.TypeFor[T]() }
func (p *OutPort[T]) broadcasting() bool             { return p.bc != nil }

func (p *OutPort[T]) connectAny(in inPortAny, cfg connConfig) (*edge, error) {
	ip, ok := in.(*InPort[T])
	if !ok {
		return nil, topoErr("cannot connect %s (%v) to %s (%v): message types differ", p.Name(), p.elem(), in.fullName(), in.elem())
	}
	return connect(p, ip, cfg)
}

func portName(u *unitState, name string) string {
	if u == nil {
		return "(unbound)." + name
	}
	return u.name + "." + name
}

// footprint calls see with what a Send touches: the port's hot bytes, its
// connection array, each connection's producer line and its lane.
func (p *OutPort[T]) footprint(see func(p unsafe.Pointer, size uintptr)) {
	see(unsafe.Pointer(p), unsafe.Offsetof(p.bc))
	if len(p.conns) > 0 {
		see(unsafe.Pointer(&p.conns[0]), uintptr(len(p.conns))*unsafe.Sizeof(p.conns[0]))
	}
	for _, k := range p.conns {
		see(unsafe.Pointer(k), unsafe.Offsetof(k.pubPushes))
		switch {
		case k.ring != nil:
			k.ring.Footprint(see)
		case k.flane != nil:
			k.flane.Footprint(see)
		}
	}
}
