package chronon

import (
	"unsafe"

	"github.com/lanework/lanework/ringbuf"
)

// depth returns the physical lane depth a connection needs: its capacity,
// plus the slot a flip-flop overwrites while the old value is still read.
func (k *conn[T]) depth() int {
	switch {
	case k.capacity == 0:
		return UnboundedDepth
	case k.dff:
		return 2
	}
	return int(k.capacity)
}

// build selects the port's transport: a plain SPSC lane for one connection
// (or its cursor on a shared broadcast ring, see planBroadcast), the
// deterministic frontier merge for more.
//
// The merge runs unbounded. A bounded merge's shared FIFO, at the sum of the
// lane depths, could never fill: every connection's admission already keeps
// its messages, in lane and FIFO alike, within its own depth. So the
// aggregate bound is enforced per connection and the FIFO's extra move per
// message is saved; results are identical.
func (p *InPort[T]) build() error {
	p.one, p.ring, p.merge, p.keepFn, p.flushFn = nil, ingress[T]{}, nil, nil, nil
	p.idle = 0
	for _, k := range p.conns {
		k.ring, k.flane = nil, nil
	}
	p.setGap()
	switch len(p.conns) {
	case 0:
		return nil
	case 1:
		k := p.conns[0]
		p.one = k
		if b := k.out.bc; b != nil {
			p.ring = ingress[T]{rd: newReader(b, k.cur)}
			return nil
		}
		r, err := ringbuf.NewSPSC[msg[T]](k.depth())
		if err != nil {
			return err
		}
		p.ring, k.ring = ingress[T]{ring: r}, r
		return nil
	}
	p.keepFn = p.keepMerged
	p.flushFn = p.flushMerged
	depths := make([]int, len(p.conns))
	for i, k := range p.conns {
		depths[i] = k.depth()
	}
	m, lanes, err := newFanIn[T](p.connIDs(), depths)
	if err != nil {
		return err
	}
	for i, k := range p.conns {
		k.flane = lanes[i]
	}
	p.merge = m
	return nil
}

// planBroadcast gives the port a shared broadcast ring when on and the
// port has BroadcastFanout or more connections, all of delay 1 and without
// capacity, and at least one of them to a single-connection InPort. Such
// connections have no admission ledger to keep per destination (only the
// producer-side rate), and every message arrives in the next cycle, so one
// payload ring with a cursor per single-connection destination carries
// them; a fan-in destination keeps its lane, merged by frontier. It runs
// after every Connect and before any InPort is built.
func (p *OutPort[T]) planBroadcast(on bool) {
	p.bc, p.lanes = nil, nil
	if !on || len(p.conns) < BroadcastFanout {
		return
	}
	var names []string
	for _, k := range p.conns {
		if k.delay != 1 || k.capacity != 0 {
			return
		}
		if len(k.in.conns) == 1 {
			names = append(names, k.name)
		}
	}
	if len(names) == 0 {
		return
	}
	p.bc = newShared[T](UnboundedDepth, names)
	n := 0
	for _, k := range p.conns {
		if len(k.in.conns) == 1 {
			k.cur = n
			n++
		} else {
			k.cur = -1
			p.lanes = append(p.lanes, k)
		}
	}
}

// buildCancel allocates the port's cancel log, sized by the largest delay
// of its connections (see cancel.go); an unconnected or NoCancelOutPort
// port needs none.
func (p *OutPort[T]) buildCancel() {
	p.log = nil
	for _, k := range p.conns {
		k.cut = cut{log: &noCancels, d: k.delay}
	}
	if len(p.conns) == 0 || p.noCancel {
		return
	}
	d := uint64(0)
	for _, k := range p.conns {
		d = max(d, uint64(k.delay))
	}
	p.log = newCancelLog(d, p.u.sim.lookahead)
	for _, k := range p.conns {
		k.cut = cut{log: p.log, d: k.delay}
	}
}

// payloadBytes returns the payload storage of the port's connections:
// lane or ring slots, the shared broadcast ring counted once.
func (p *OutPort[T]) payloadBytes() int {
	n := 0
	conns := p.conns
	if p.bc != nil {
		n, conns = len(p.bc.buf)*int(unsafe.Sizeof(msg[T]{})), p.lanes
	}
	for _, k := range conns {
		switch {
		case k.ring != nil:
			n += k.ring.Cap() * int(unsafe.Sizeof(msg[T]{}))
		case k.flane != nil:
			n += k.flane.Cap() * int(unsafe.Sizeof(struct {
				a uint64
				m lmsg[T]
			}{}))
		}
	}
	return n
}

func (p *InPort[T]) connIDs() []uint64 {
	ids := make([]uint64, len(p.conns))
	for i, k := range p.conns {
		ids[i] = k.id
	}
	return ids
}

// state reports the port's connections, lanes and merge (see stateSpan).
func (p *InPort[T]) state(see func(p unsafe.Pointer, size uintptr)) {
	for _, k := range p.conns {
		see(unsafe.Pointer(k), unsafe.Sizeof(*k))
		see(unsafe.Pointer(k.ring), unsafe.Sizeof(*k.ring))
		see(unsafe.Pointer(k.flane), unsafe.Sizeof(*k.flane))
	}
	see(unsafe.Pointer(p.merge), unsafe.Sizeof(*p.merge))
}
