package ledger

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// executor holds the Transactor's working state. The working balance of an
// account is its overlay slot's balance if it has one, otherwise its readable
// balance (see overlay). The dedup index is the Transactor's own.
type executor struct {
	readable   []atomic.Int64 // the Snapshotter's balances, read only here
	ov         overlay
	dedup      *dedup
	maxEntries int
	sink       int64 // keeps touch's loads
}

// balance returns account a's working balance: the balance after the last
// transaction the Transactor executed.
func (x *executor) balance(a uint64) int64 {
	if b, ok := x.ov.get(a); ok {
		return b
	}
	return x.readable[a].Load()
}

// lookup returns account a's overlay position (see overlay.find) and its
// working balance.
func (x *executor) lookup(a uint64) (i uint64, found bool, bal int64) {
	i, found = x.ov.find(a)
	if found {
		return i, true, x.ov.slots[i].bal
	}
	return i, false, x.readable[a].Load()
}

// touch loads, for each request, the overlay slot at its accounts' home,
// their readable balances and its ref's dedup slot. The loads are independent of each other, so the
// cache misses of a group of requests overlap here instead of being paid one
// after another inside execute, which then finds the lines in cache.
func (x *executor) touch(reqs []request) {
	var s int64
	for i := range reqs {
		r := &reqs[i]
		switch r.kind {
		case KindDeposit, KindWithdrawal:
			s += x.peek(r.a)
		case KindTransfer:
			s += x.peek(r.a) + x.peek(r.b)
		}
		if r.userRef != 0 {
			s += x.dedup.touch(r.userRef)
		}
	}
	x.sink += s
}

func (x *executor) peek(a uint64) int64 {
	return int64(x.ov.slots[x.ov.home(a)].acct) + x.readable[a].Load()
}

// entriesBound is the most overlay slots transaction r can take.
func (x *executor) entriesBound(r *request) int {
	if r.kind != KindComposite {
		return 2
	}
	if len(r.legs) > x.maxEntries {
		return 0 // EntryLimitExceeded, no entries
	}
	return len(r.legs)
}

// execute runs r as transaction id at time ts and fills rec. On failure the
// balances are left exactly as they were and rec has no entries. The caller
// has made room in the overlay for entriesBound(r) new slots.
//
// Checks run in a fixed order, which the model test mirrors: Duplicate, then
// (composites) EntryLimitExceeded and ZeroSumViolation, then per entry in
// order InsufficientFunds and BalanceOverflow.
func (x *executor) execute(r *request, id uint64, ts int64, rec *txRecord) {
	*rec = txRecord{id: id, userRef: r.userRef, ts: ts, kind: r.kind, w: r.w, wlevel: r.wlevel}
	if r.userRef != 0 {
		if o, dup := x.dedup.lookup(id, r.userRef); dup {
			rec.fail, rec.dupOf = Duplicate, o
			return
		}
		x.dedup.add(id, r.userRef)
	}
	switch r.kind {
	case KindDeposit:
		rec.fail = x.move(SystemAccount, r.a, int64(r.amount), false, id, rec)
	case KindWithdrawal:
		rec.fail = x.move(r.a, SystemAccount, int64(r.amount), true, id, rec)
	case KindTransfer:
		rec.fail = x.move(r.a, r.b, int64(r.amount), true, id, rec)
	case KindComposite:
		rec.fail = x.composite(r, id, rec)
	}
}

// move debits from and credits to (from != to) by amt (> 0).
func (x *executor) move(from, to uint64, amt int64, noNegative bool, id uint64, rec *txRecord) FailReason {
	fi, fok, fb := x.lookup(from)
	ti, tok, tb := x.lookup(to)
	if noNegative && fb < amt {
		return InsufficientFunds
	}
	if fb < math.MinInt64+amt || tb > math.MaxInt64-amt {
		return BalanceOverflow
	}
	fb -= amt
	tb += amt
	x.ov.put(fi, fok, from, fb, id)
	if !fok && !tok && ti == fi { // both probes ended at the slot from just took
		ti, tok = x.ov.find(to)
	}
	x.ov.put(ti, tok, to, tb, id)
	rec.n = 2
	rec.inline = [2]Entry{{Account: from, Delta: -amt, Balance: fb}, {Account: to, Delta: amt, Balance: tb}}
	return OK
}

// composite computes every leg's resulting balance first (a leg's account
// may repeat: its balance is then the latest earlier leg's result) and
// changes the working balances only once all legs pass.
func (x *executor) composite(r *request, id uint64, rec *txRecord) FailReason {
	legs := r.legs
	if len(legs) > x.maxEntries {
		return EntryLimitExceeded
	}
	var sum sum128
	for _, l := range legs {
		sum.add(l.Delta)
	}
	if !sum.zero() {
		return ZeroSumViolation
	}
	entries := make([]Entry, len(legs))
	for i, l := range legs {
		cur, found := int64(0), false
		for j := i - 1; j >= 0; j-- {
			if entries[j].Account == l.Account {
				cur, found = entries[j].Balance, true
				break
			}
		}
		if !found {
			cur = x.balance(l.Account)
		}
		nb, ok := addInt64(cur, l.Delta)
		switch {
		case !ok:
			return BalanceOverflow
		case r.flags&NoNegative != 0 && l.Account != SystemAccount && nb < 0:
			return InsufficientFunds
		}
		entries[i] = Entry{Account: l.Account, Delta: l.Delta, Balance: nb}
	}
	for _, e := range entries {
		x.ov.set(e.Account, e.Balance, id)
	}
	rec.n = uint16(len(entries))
	rec.extra = entries
	return OK
}

// addInt64 returns a+b and whether it did not overflow.
func addInt64(a, b int64) (int64, bool) {
	s := a + b
	return s, (b >= 0) == (s >= a)
}

// sum128 adds int64s without overflow, so that deltas whose running sum
// leaves the int64 range but whose total is zero still net to zero.
type sum128 struct {
	hi int64
	lo uint64
}

func (s *sum128) add(d int64) {
	var c uint64
	s.lo, c = bits.Add64(s.lo, uint64(d), 0)
	s.hi += int64(c) + d>>63 // d>>63 sign-extends d into the high word
}

func (s *sum128) zero() bool { return s.hi == 0 && s.lo == 0 }
