package chronon

import (
	"sync/atomic"
	"unsafe"

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

// lmsg is the envelope in a fan-in lane: frontier keeps the arrive cycle
// beside it, so the message does not store it a second time.
type lmsg[T any] struct {
	epoch uint32
	lane  uint32
	v     T
}

// wide reports whether msg[T] is wider than four words, too wide for the
// compiler to keep in registers (a constant for each instantiation). A wide
// message built in a local and then copied, into a lane or out of a call's
// results, is copied with loads wider than the stores that built it, and
// each such load waits for the stores to drain (a failed store-to-load
// forward). So wide messages are written into and read out of lane slots in
// place; narrow ones are cheaper passed by value.
func wide[T any]() bool {
	var m msg[T]
	return unsafe.Sizeof(m) > 4*unsafe.Sizeof(uintptr(0))
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
	// Producer side, one cache line: what the sending unit reads and writes
	// per message (a connection's lines are per-unit working set, which
	// sets the cost per unit-cycle of a large model).
	ring        *ringbuf.SPSC[msg[T]]   // single-connection destination
	flane       *frontier.Lane[lmsg[T]] // fan-in destination
	pushes      uint64                  // total pushes
	pushCycle   uint64                  // cycle of the last push
	lim         uint64                  // push count from which full consults the credits; none on a finite-capacity edge; 0: armed (see arrival)
	delay       uint32
	rate        uint32 // 0: unlimited
	capacity    uint32 // 0: unlimited
	cyclePushes uint32 // pushes in pushCycle
	lane        uint32 // index of the connection in the receiving port
	dff         bool   // delay 1, capacity 1, rate 1: one older unread entry counts as free

	// cross is set by the parallel engine when producer and receiver are
	// in different clusters, which may run on different goroutines: the
	// producer then publishes its push count in pubPushes for the
	// receiver's drained shortcut, and the receiver its ledger in pub,
	// which the producer reads for admission and overflow. It is set
	// between runs only.
	cross bool

	// The second line: the published push count (producer-written), then
	// cold fields, for building and error reports. It keeps the producer's
	// line and the receiver's apart.
	pubPushes atomic.Uint64 // pushes, published after the message when cross
	out       *OutPort[T]
	in        *InPort[T]
	name      string // "unit.port -> unit.port"
	id        uint64
	cur       int // the connection's cursor on its OutPort's shared broadcast ring; -1: none
	_         [cacheLine - 56]byte

	// Receiver side, one cache line: its pop-credit ledger and its view of
	// the sender's cancels (which holds its copy of the delay).
	cut       cut // the sender's cancels in effect (see cancelLog)
	pops      uint64
	popCycle  uint64
	cyclePops uint32 // pops in popCycle

	pub *ledger // the ledger as published to another worker: allocated, and used, only when cross
	_   [cacheLine - 8]byte
}

// ledger is a receiver's pop-credit ledger published for a producer on
// another goroutine. It is written by the receiver only and sits on its own
// cache line, away from the producer's push counts; a connection that never
// crosses workers does not have one (padding for 40,000 connections is 5 MB
// of working set).
//
// The parallel engine never lets the receiver start cycle c+1 before the
// producer has finished cycle c, nor the producer start cycle c before the
// receiver has finished c-1 (see engine.go). So while the producer runs c,
// the receiver is running c or waiting to; cycles before c are final. The
// receiver stores prev, then cycle, then pops; the producer loads pops, then
// cycle, then prev. sync/atomic operations are sequentially consistent, so:
// if the producer sees cycle == c it returns prev, stored before cycle and
// stable for the rest of c; otherwise the receiver had not started crediting
// c when cycle was loaded, so the pops loaded before it count only earlier
// cycles, and all of those (receiver done with c-1).
type ledger struct {
	_     [cacheLine]byte
	pops  atomic.Uint64
	cycle atomic.Uint64
	prev  atomic.Uint64
	_     [cacheLine - 24]byte
}

// cacheLine is the padding unit against false sharing.
const cacheLine = 64

// credits returns the pops credited to a producer in cycle c: those made in
// earlier cycles.
func (k *conn[T]) credits(c uint64) uint64 {
	if k.cross {
		pops := k.pub.pops.Load()
		if k.pub.cycle.Load() == c {
			return k.pub.prev.Load()
		}
		return pops
	}
	if k.popCycle == c {
		return k.pops - uint64(k.cyclePops)
	}
	return k.pops
}

// credit records one consumed (received, filtered, flushed or cancelled)
// message in receiver cycle c.
func (k *conn[T]) credit(c uint64) {
	if k.popCycle != c {
		k.popCycle, k.cyclePops = c, 0
		if k.cross {
			k.pub.prev.Store(k.pops)
			k.pub.cycle.Store(c)
		}
	}
	k.pops++
	k.cyclePops++
	if k.cross {
		k.pub.pops.Store(k.pops)
	}
}

// admits reports whether the connection accepts one more message in
// producer cycle c.
func (k *conn[T]) admits(c uint64) bool {
	if k.rate != 0 && k.pushCycle == c && k.cyclePushes >= k.rate {
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
			before -= uint64(k.cyclePushes)
		}
		if before > cr { // an entry from an earlier cycle is ready now: a flip-flop overwrites it
			occ--
		}
	}
	return occ < uint64(k.capacity)
}

// push publishes v. The caller has checked admits.
//
// A wide message bound for a single-connection lane is written in place
// (see wide).
func (k *conn[T]) push(c uint64, epoch uint32, v *T) {
	if k.pushes >= k.lim && k.full(c) {
		k.out.u.sim.overflow(k.out.u, k.name, c)
		return
	}
	k.record(c)
	var ok bool
	switch {
	case k.ring != nil && !wide[T]():
		ok = k.ring.TryPush(msg[T]{arrive: c + uint64(k.delay), epoch: epoch, lane: k.lane, v: *v})
	case k.ring != nil:
		if s := k.ring.Reserve(1); len(s) == 1 {
			m := &s[0]
			m.arrive, m.epoch, m.lane, m.v = c+uint64(k.delay), epoch, k.lane, *v
			k.ring.Commit(1)
			ok = true
		}
	default:
		ok = k.flane.TryPush(c+uint64(k.delay), lmsg[T]{epoch: epoch, lane: k.lane, v: *v})
	}
	if !ok {
		k.out.u.sim.overflow(k.out.u, k.name, c)
	}
	k.publish()
}

// full reports whether an unlimited-capacity connection has no room left
// for a push in producer cycle c: UnboundedDepth messages sent and not
// consumed in cycles before c. That is an overflow, a correctness failure,
// decided like admission from simulated events only: the lane's physical
// room would include the receiver's pops of cycle c when it has ticked
// first, so the overflow's cycle would depend on tick order. The physical
// lane always has room when full is false: pops credited before c are
// physical pops too. Callers test pushes >= lim first, which is false until
// the backlog over the credits last read could reach the depth (and always
// on a finite-capacity edge, whose admission bounds its backlog), except
// on a connection armed for a sleeping receiver, whose pushes all come
// here (see arrival).
func (k *conn[T]) full(c uint64) bool {
	if k.lim == 0 {
		return k.arrival(c)
	}
	k.lim = k.credits(c) + UnboundedDepth
	return k.pushes >= k.lim
}

// record counts one push in producer cycle c in the producer's ledger.
func (k *conn[T]) record(c uint64) {
	if k.pushCycle != c {
		k.pushCycle, k.cyclePushes = c, 0
	}
	k.pushes++
	k.cyclePushes++
}

// publish publishes the push count, after the message, when cross.
func (k *conn[T]) publish() {
	if k.cross {
		k.pubPushes.Store(k.pushes)
	}
}

// pushed returns the producer's push count as the receiver may use it: the
// plain count on one goroutine, the published one across workers. The
// published count may include pushes of the receiver's own cycle, which
// are not ready; it includes every push of earlier cycles, since the
// producer published those before finishing the cycle.
func (k *conn[T]) pushed() uint64 {
	if k.cross {
		return k.pubPushes.Load()
	}
	return k.pushes
}

// limit returns the newest arrive cycle a flush in receiver cycle c covers:
// messages sent in earlier cycles, plus those sent this cycle on a
// zero-delay edge (whose sender has already ticked).
func (k *conn[T]) limit(c uint64) uint64 {
	if d := uint64(k.cut.d); d != 0 { // the receiver's copy of the delay
		return c + d - 1
	}
	return c
}
