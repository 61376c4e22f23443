package chronon

// This file is CancelInFlight's transport: an OutPort's cancel log, written
// by the sender, and each connection's cut, kept by the receiver.
//
// The rule (docs/chronon.md): a cancel in sender cycle x discards, on a
// connection of delay d, every message sent before it that the receiver has
// not taken by cycle x+d. So a receiver in cycle c needs E(c-d), the
// sender's epoch (count of cancels) at the end of its cycle c-d: a message
// stamped with epoch e is cancelled iff e < E(c-d). E(c-d) depends on
// simulated events only, never on whether the sender has already ticked in
// the receiver's cycle, or on another worker's progress.
//
// The log (a cycleLog of the epoch) holds one entry per cycle in which the
// epoch advanced. The receiver uses only entries with cycle+d <= c. When it
// runs c, the sender has finished every cycle through c-d (the engines'
// rule for a delay-d edge) and, on a zero-delay edge, has ticked in c (plan
// order): so every entry it uses is final (invariant 2). The sender is at
// most in cycle c+L-1 (the lookahead, 1 by default: see WithMaxLookahead),
// so at most d+L-1 entries have a cycle after c-d, and after the receiver's
// load of the entry count the sender appends at most one more, overwriting
// the oldest slot. A log of size >= d+L+1 therefore keeps, among the newest
// size-1 entries the receiver loaded, an entry in effect, unless every
// entry is in effect; and any older entry, possibly overwritten, is in
// effect too (invariant 3). The log is sized by the largest delay of the
// port's connections.
//
// Epochs advance only when a message was sent since the last advance (a
// cancel with nothing new to cancel changes nothing), so the distance from
// a message's epoch to the current one is bounded by the sends after it;
// epochs compare as serial numbers, correct while fewer than 2^31 messages
// were sent on the port after one that is still unconsumed.

// newCancelLog returns a log for connections of delays up to maxDelay with
// lookahead la.
func newCancelLog(maxDelay, la uint64) *cycleLog {
	return newCycleLog(int(maxDelay + la + 1))
}

// cut is a connection's receiver-side view of its sender's log. It is
// refreshed only when it may have changed: when the log has entries it has
// not seen, or, while a loaded entry is not yet in effect (seen is none), in
// the cycle that entry takes effect (next); entries appended meanwhile are of
// later cycles and take effect no sooner. A connection whose sender cannot
// cancel reads an empty log that never changes.
//
// The fields stale reads come first; used, which only refresh touches, last.
type cut struct {
	log  *cycleLog
	seen uint64 // the log's entry count at the last refresh; none: an entry is pending
	ep   uint32 // E(c-d): messages stamped older are cancelled
	d    uint32 // the connection's delay
	next uint64 // with an entry pending: the cycle it takes effect in
	used uint64 // log entries folded into ep
}

// noCancels is the log of every port that cannot cancel: it stays empty.
var noCancels cycleLog

// stale reports whether a message stamped with epoch e is cancelled in
// receiver cycle c (see the cancel log above): one load of the log's count and two
// comparisons, unless the cut needs a refresh.
func (t *cut) stale(e uint32, c uint64) bool {
	if t.log.n.Load() != t.seen {
		t.refresh(c)
	}
	return e-t.ep >= 1<<31 // e < ep as serial numbers
}

// refresh computes E(c-d) from the sender's log.
func (t *cut) refresh(c uint64) {
	if t.seen == none && c < t.next {
		return // the pending entry is not in effect yet
	}
	l := t.log
	n := l.n.Load()
	t.seen = n
	i := t.used
	if keep := l.mask; n > keep && i < n-keep {
		i = n - keep // older slots may be reused meanwhile; all in effect (invariant 3)
	}
	for ; i < n; i++ {
		e := &l.ent[i&l.mask]
		if x := e.cyc.Load() + uint64(t.d); x > c {
			t.next, t.seen = x, none // in effect from cycle+d
			break
		}
		t.ep = uint32(e.val.Load())
	}
	t.used = i
}
