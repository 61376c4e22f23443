package chronon

import (
	"sync/atomic"

	"github.com/lanework/lanework/ringbuf"
)

// cycleLog is the history of a counter that one unit advances and a unit
// on another goroutine reads as of some earlier cycle: an OutPort's cancel
// epoch (see cut) and a connection's pop credits (see conn.credits). It
// holds one entry per cycle in which the counter advanced: the cycle and
// the value at its end, in a ring of a power-of-two size. Invariants:
//
//  1. Entries are appended in cycle order; an entry's cycle never changes,
//     and its value changes only while the writer is still in that cycle.
//  2. A reader asks only for entries of cycles the writer has finished, so
//     every entry it uses is final.
//  3. The ring is sized so that, while a reader needs an entry, fewer than
//     size-1 entries are appended after it (each user states its bound):
//     among the newest size-1 entries below the count the reader loaded,
//     the one it needs is present unless it is older than all of them.
//
// Memory ordering: the writer stores an entry's cycle and value, then the
// count; a reader loads the count, then entries below it. That is message
// passing, which needs release stores and acquire loads only: the writer
// stores with ringbuf.StoreRelease (on amd64 a plain MOV rather than a
// locked XCHG, which cost the CPU pipeline about a third of its cycle when
// every connection published), the reader loads with sync/atomic, so a
// reader sees every entry below the count it loaded. No one loads a log to
// decide whether to wait for its writer: the engines' handshakes (done.Add,
// a worker's progress) are sequentially consistent themselves.
type cycleLog struct {
	n    atomic.Uint64 // entries appended
	ent  []cycleEntry
	mask uint64

	// Writer-private.
	last uint64 // cycle of the newest entry; none before the first
}

// newCycleLog returns a log of at least size entries.
func newCycleLog(size int) *cycleLog {
	size = pow2(size)
	return &cycleLog{ent: make([]cycleEntry, size), mask: uint64(size - 1), last: none}
}

// cycleEntry is one entry of a cycleLog: a reader finds the cycle and its
// value on one cache line.
type cycleEntry struct {
	cyc, val atomic.Uint64
}

// advance records that the counter became v in writer cycle x.
func (l *cycleLog) advance(x, v uint64) {
	n := l.n.Load() // the writer's own count
	if l.last == x {
		ringbuf.StoreRelease(&l.ent[(n-1)&l.mask].val, v)
		return
	}
	e := &l.ent[n&l.mask]
	ringbuf.StoreRelease(&e.cyc, x)
	ringbuf.StoreRelease(&e.val, v)
	ringbuf.StoreRelease(&l.n, n+1)
	l.last = x
}

// before returns the counter's value at the end of the newest cycle before
// c that has an entry, or 0 if none has. The writer must have finished
// cycle c-1 and have appended fewer than size-1 entries of cycles c and
// later (invariant 3).
func (l *cycleLog) before(c uint64) uint64 {
	n := l.n.Load()
	lo := uint64(0)
	if n > l.mask {
		lo = n - l.mask
	}
	for i := n; i > lo; i-- {
		if e := &l.ent[(i-1)&l.mask]; e.cyc.Load() < c {
			return e.val.Load()
		}
	}
	return 0
}
