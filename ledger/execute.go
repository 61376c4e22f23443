package ledger

import (
	"math"
	"math/bits"
)

// executor holds the Transactor's working state: the only copy of the
// balances it writes, and the dedup index.
type executor struct {
	bal        []int64
	dedup      *dedup
	maxEntries int
}

// execute runs r as transaction id at time ts and fills rec. On failure the
// balances are left exactly as they were and rec has no entries.
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
		rec.fail = x.move(SystemAccount, r.a, int64(r.amount), false, rec)
	case KindWithdrawal:
		rec.fail = x.move(r.a, SystemAccount, int64(r.amount), true, rec)
	case KindTransfer:
		rec.fail = x.move(r.a, r.b, int64(r.amount), true, rec)
	case KindComposite:
		rec.fail = x.composite(r, rec)
	}
}

// move debits from and credits to by amt (> 0).
func (x *executor) move(from, to uint64, amt int64, noNegative bool, rec *txRecord) FailReason {
	fb, tb := x.bal[from], x.bal[to]
	if noNegative && fb < amt {
		return InsufficientFunds
	}
	if fb < math.MinInt64+amt || tb > math.MaxInt64-amt {
		return BalanceOverflow
	}
	fb -= amt
	tb += amt
	x.bal[from], x.bal[to] = fb, tb
	rec.n = 2
	rec.inline = [2]Entry{{Account: from, Delta: -amt, Balance: fb}, {Account: to, Delta: amt, Balance: tb}}
	return OK
}

func (x *executor) composite(r *request, rec *txRecord) FailReason {
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
		nb, ok := addInt64(x.bal[l.Account], l.Delta)
		fail := OK
		switch {
		case !ok:
			fail = BalanceOverflow
		case r.flags&NoNegative != 0 && l.Account != SystemAccount && nb < 0:
			fail = InsufficientFunds
		}
		if fail != OK {
			for j := i - 1; j >= 0; j-- { // roll back, newest first
				x.bal[legs[j].Account] -= legs[j].Delta
			}
			return fail
		}
		x.bal[l.Account] = nb
		entries[i] = Entry{Account: l.Account, Delta: l.Delta, Balance: nb}
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
