package chronon

import (
	"github.com/lanework/lanework/frontier"
	"github.com/lanework/lanework/ringbuf"
)

// msg is the envelope carried by a lane.
type msg[T any] struct {
	arrive uint64
	epoch  uint32 // sender's cancel epoch at send time
	lane   uint32 // index of the connection in the receiving port
	v      T
}

// none marks "no cycle yet" in the ledgers below.
const none = ^uint64(0)

// conn is one connection. Producer-owned fields are written only by the
// sending unit, ledger fields only by the receiving unit.
//
// Admission is decided from simulated events only: the producer's own push
// count and the receiver's pop credits from cycles before the current one.
// The sequential engine ticks every unit in the same cycle, so the ledger
// needs just the pops of the current cycle kept apart from older ones.
type conn[T any] struct {
	id       uint64
	name     string // "unit.port -> unit.port"
	out      *OutPort[T]
	in       *InPort[T]
	delay    uint64
	capacity uint64 // 0: unlimited
	rate     uint64 // 0: unlimited
	dff      bool   // delay 1, capacity 1, rate 1: one older unread entry counts as free
	lane     uint32
	ring     *ringbuf.SPSC[msg[T]]  // single-connection destination
	flane    *frontier.Lane[msg[T]] // fan-in destination

	// Producer-owned.
	pushes     uint64 // total pushes
	pushCycle  uint64 // cycle of the last push
	pushesPrev uint64 // pushes before pushCycle

	// Receiver-owned pop-credit ledger.
	pops     uint64
	popCycle uint64
	popsPrev uint64 // pops before popCycle
}

// credits returns the pops credited to a producer in cycle c: those made in
// earlier cycles.
func (k *conn[T]) credits(c uint64) uint64 {
	if k.popCycle == c {
		return k.popsPrev
	}
	return k.pops
}

// credit records one consumed (received, filtered, flushed or cancelled)
// message in receiver cycle c.
func (k *conn[T]) credit(c uint64) {
	if k.popCycle != c {
		k.popsPrev = k.pops
		k.popCycle = c
	}
	k.pops++
}

// admits reports whether the connection accepts one more message in
// producer cycle c.
func (k *conn[T]) admits(c uint64) bool {
	if k.rate != 0 && k.pushCycle == c && k.pushes-k.pushesPrev >= k.rate {
		return false
	}
	if k.capacity == 0 {
		return true
	}
	cr := k.credits(c)
	occ := k.pushes - cr
	if k.dff {
		before := k.pushes
		if k.pushCycle == c {
			before = k.pushesPrev
		}
		if before > cr { // an entry from an earlier cycle is ready now: a flip-flop overwrites it
			occ--
		}
	}
	return occ < k.capacity
}

// push publishes v. The caller has checked admits.
func (k *conn[T]) push(c uint64, epoch uint32, v T) {
	if k.pushCycle != c {
		k.pushesPrev = k.pushes
		k.pushCycle = c
	}
	k.pushes++
	m := msg[T]{arrive: c + k.delay, epoch: epoch, lane: k.lane, v: v}
	var ok bool
	if k.ring != nil {
		ok = k.ring.TryPush(m)
	} else {
		ok = k.flane.TryPush(m.arrive, m)
	}
	if !ok {
		k.out.u.sim.overflow(k.name, c)
	}
}

// stale reports whether a message stamped with epoch e is cancelled in
// receiver cycle c. A cancel made in sender cycle x reaches the receiver in
// cycle x+delay, like a message, so the outcome does not depend on the
// order in which sender and receiver tick.
func (k *conn[T]) stale(e uint32, c uint64) bool {
	p := k.out
	if e == p.epoch {
		return false
	}
	if p.epoch-e > cancelHistory {
		return true // cancel #e is older than the history; older than every visible one
	}
	return p.cancelAt[e%cancelHistory]+k.delay <= c
}

// limit returns the newest arrive cycle a flush in receiver cycle c covers:
// messages sent in earlier cycles, plus those sent this cycle on a
// zero-delay edge (whose sender has already ticked).
func (k *conn[T]) limit(c uint64) uint64 {
	if k.delay == 0 {
		return c
	}
	return c + k.delay - 1
}
