package chronon

import "github.com/lanework/lanework/ringbuf"

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

// build selects the port's transport: a plain SPSC lane for one connection,
// the deterministic frontier merge for more.
//
// The merge runs unbounded. A bounded merge's shared FIFO, at the sum of the
// lane depths, could never fill: every connection's admission already keeps
// its messages, in lane and FIFO alike, within its own depth. So the
// aggregate bound is enforced per connection and the FIFO's extra move per
// message is saved; results are identical.
func (p *InPort[T]) build() error {
	switch len(p.conns) {
	case 0:
		return nil
	case 1:
		k := p.conns[0]
		r, err := ringbuf.NewSPSC[msg[T]](k.depth())
		if err != nil {
			return err
		}
		p.one, p.ring, k.ring = k, r, r
		return nil
	}
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
	p.keepFn = p.keepMerged
	p.flushFn = p.flushMerged
	return nil
}

func (p *InPort[T]) connIDs() []uint64 {
	ids := make([]uint64, len(p.conns))
	for i, k := range p.conns {
		ids[i] = k.id
	}
	return ids
}
