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
	lim         uint64                  // push count from which the producer consults the credits (see admits and full); 0 while armed
	delay       uint32
	rate        uint32 // 0: unlimited
	capacity    uint32 // 0: unlimited
	cyclePushes uint32 // pushes in pushCycle
	lane        uint32 // index of the connection in the receiving port
	dff         bool   // delay 1, capacity 1, rate 1: one older unread entry counts as free

	// cross is set by the parallel engine when producer and receiver may
	// run on different goroutines: the producer then publishes its push
	// count in pubPushes for the receiver's drained shortcut, and the
	// receiver its pop credits in clog, which the producer reads for
	// admission and overflow. It is set between runs only.
	cross bool
	// armed is set while the receiver sleeps until a message arrives (see
	// InPort.arm): lim then stays 0, so every push reaches full, which
	// reports it (arrival); the admission slow path leaves lim alone.
	armed bool

	// The second line: the published push count (producer-written), then
	// cold fields, for building and error reports. It keeps the producer's
	// line and the receiver's apart.
	pubPushes atomic.Uint64 // pushes, published after the message when cross
	out       *OutPort[T]
	in        *InPort[T]
	name      string // "unit.port -> unit.port"
	id        uint64
	cur       int // the connection's cursor on its OutPort's shared broadcast ring; -1: none
	// rprog is the receiver's worker's progress (the next cycle it runs)
	// under the lookahead engine, nil otherwise: before it reads the
	// credits for its cycle c, the producer waits for rprog >= c.
	rprog *atomic.Uint64

	// Receiver side, one cache line: its pop-credit count, whether it
	// publishes it to another goroutine, and its view of the sender's cancels
	// (which holds its copy of the delay). Only the cut's last field, read
	// and written by a refresh alone, falls on the fourth line, with the
	// fields used only across goroutines.
	pops       uint64
	popCycle   uint64
	popsBefore uint64 // pops in cycles before popCycle
	rcross     bool   // cross, the receiver's copy on its own line (set with cross)
	cut        cut    // the sender's cancels in effect (see cancel.go)

	// clog is the pop credits as published to another goroutine
	// (allocated, and used, only when cross); pprog the producer's
	// worker's progress under the lookahead engine (see InPort.flush).
	clog  *cycleLog
	pprog *atomic.Uint64
	_     [cacheLine - 24]byte
}

// cacheLine is the padding unit against false sharing.
const cacheLine = 64

// credits returns the pops credited to a producer in cycle c: those made in
// earlier cycles.
//
// Across goroutines they come from the receiver's log of its pop count
// (a cycleLog): the newest entry of a cycle before c. The receiver must
// have finished c-1: the barrier engine runs no cluster in c before every
// cluster finished c-1, and under the lookahead engine the producer waits
// for the receiver's progress here (never inside the inlined admission:
// only when its cached bound, lim, does not decide). Meanwhile the
// receiver may run ahead, but by less than L cycles (the global window of
// the lookahead engine), so it appends at most L entries of cycle c and
// later while the producer is in c. room also reads the credits before the
// receiver's progress q >= c+1-L: at most 2L-1 entries are of cycle q or
// later. The log has 2L+2 entries or more (invariant 3 of cycleLog).
func (k *conn[T]) credits(c uint64) uint64 {
	if k.cross {
		if p := k.rprog; p != nil && p.Load() < c {
			k.out.u.await(p, c)
		}
		return k.clog.before(c)
	}
	if k.popCycle == c {
		return k.popsBefore
	}
	return k.pops
}

// credit records one consumed (received, filtered, flushed or cancelled)
// message in receiver cycle c.
func (k *conn[T]) credit(c uint64) {
	if k.popCycle != c {
		k.popCycle, k.popsBefore = c, k.pops
	}
	k.pops++
	if k.rcross {
		k.clog.advance(c, k.pops)
	}
}

// admits reports whether the connection accepts one more message in
// producer cycle c.
//
// On a finite-capacity edge lim is the credits last read plus the
// capacity: credits only grow, so while pushes < lim the occupancy is
// under the capacity whatever the receiver did since, and the credits
// (the receiver's line; under the lookahead engine, a wait for its
// progress) are not read. The flip-flop's discount only lowers the
// occupancy, so it cannot turn that answer.
func (k *conn[T]) admits(c uint64) bool { return k.fits(c) || k.admitsSlow(c) }

// fits is admits's inlined test: true when lim and the rate decide.
func (k *conn[T]) fits(c uint64) bool {
	return k.pushes < k.lim && (k.rate == 0 || k.pushCycle != c || k.cyclePushes < k.rate)
}

// admitsSlow is admits when fits does not decide: the rate, then the
// occupancy from the credits (an unlimited edge near its depth, whose
// overflow push decides, admits). It raises lim, unless the connection is
// armed (see arrival).
func (k *conn[T]) admitsSlow(c uint64) bool {
	if k.rate != 0 && k.pushCycle == c && k.cyclePushes >= k.rate {
		return false
	}
	if k.capacity == 0 || k.pushes < k.lim {
		return true
	}
	var cr uint64
	switch {
	case k.cross:
		if k.roomFinal(c) {
			return true
		}
		cr = k.credits(c)
	case k.popCycle == c: // credits, inlined
		cr = k.popsBefore
	default:
		cr = k.pops
	}
	if !k.armed {
		k.lim = cr + uint64(k.capacity)
	}
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

// roomFinal is admitsSlow's first try under the lookahead engine: the
// credits the receiver has made final, those of the cycles before its
// progress, are a lower bound, so a message they admit is admitted; only
// when they do not does the producer wait for the receiver to finish c-1
// (see credits). The flip-flop's discount needs the exact credits.
func (k *conn[T]) roomFinal(c uint64) bool {
	if k.rprog == nil {
		return false
	}
	if q := k.rprog.Load(); q < c {
		if cr := k.clog.before(q); k.pushes-cr < uint64(k.capacity) {
			if !k.armed {
				k.lim = cr + uint64(k.capacity)
			}
			return true
		}
	}
	return false
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
		if m := k.ring.Claim(); m != nil {
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
// the backlog over the credits last read could reach the depth. On a
// finite-capacity edge, whose admission bounds its backlog, lim serves
// admits and full is always false. A connection armed for a sleeping
// receiver keeps lim 0, so all its pushes come here (see arrival).
func (k *conn[T]) full(c uint64) bool {
	if k.armed {
		return k.arrival(c)
	}
	if k.capacity != 0 {
		return false
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

// publish publishes the push count, after the message, when cross: a
// release store, since a reader needs only the messages before the count
// it loads (see cycleLog for why nothing here needs a sequentially
// consistent store).
func (k *conn[T]) publish() {
	if k.cross {
		ringbuf.StoreRelease(&k.pubPushes, k.pushes)
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
