package ledger

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// executor holds the Transactor's working state: the working cells (one
// per column of each account slot, after the last transaction it executed),
// the account table and the dedup index, all the Transactor's to write.
// The working cells are a private copy of the readable cells, which lag them
// by the transactions between Snapshot and Computed; nobody else reads them.
type executor struct {
	work  []int64 // 4 cells per account slot, as the readable cells
	accts *accountTable
	// tent holds the accounts a linked chain being executed created,
	// slots accts.n on: they enter accts only if the chain applies;
	// tentClosed, those of them a closing transfer of the chain closed.
	tent       []acctMeta
	tentClosed []bool
	inChain    bool
	chainHead  bool // executing a chain's first member
	// book is the pending book (pending.go); undo, the changes to it of
	// the chain being executed.
	book       *pendingBook
	undo       []bookUndo
	ts         int64 // the run's timestamp (beginRun)
	due        bool  // an open pending transfer may have expired by ts
	dedup      *dedup
	maxEntries int
	sink       int64 // keeps touch's loads
}

// newWork returns the working cells of maxAccounts slots, the first n
// loaded from the readable cells (the recovered state; the rest are 0).
func newWork(maxAccounts, n uint64, readable []atomic.Int64) []int64 {
	w := newWorkCells(maxAccounts)
	// One copy, not an atomic load per cell (a tenth of an Open that
	// replays 1M accounts): the stages have not started, so nothing
	// writes the readable cells, and their writer (the replay, or a
	// snapshot's load) happened before: on this goroutine, or before the
	// go statement that started it (copyWorkAhead).
	if n > 0 {
		copy(w, unsafe.Slice((*int64)(unsafe.Pointer(&readable[0])), cellsPerAccount*n))
	}
	return w
}

// cols returns slot s's four working columns (one 32-byte group).
func (x *executor) cols(s uint64) *[numColumns]int64 {
	return (*[numColumns]int64)(x.work[cellsPerAccount*s : cellsPerAccount*s+cellsPerAccount])
}

// value returns cell c's working value: after the last transaction the
// Transactor executed.
func (x *executor) value(c uint64) int64 { return x.work[c] }

// setCell sets cell c's working value.
func (x *executor) setCell(c, v uint64) { x.work[c] = int64(v) }

// touch loads, for each request, what execute will read, in two rounds so
// that the cache misses of a group of requests overlap instead of being
// paid one after another inside execute: first its accounts' index entries
// at their homes and its ref's dedup slot; then, through the entries (now
// in cache), each account's working cells.
func (x *executor) touch(reqs []request) {
	var s int64
	for i := range reqs {
		r := &reqs[i]
		switch r.kind {
		case KindDeposit, KindWithdrawal:
			s += int64(x.accts.peekHome(r.a))
		case KindTransfer:
			s += int64(x.accts.peekHome(r.a) + x.accts.peekHome(r.b))
		}
		if r.userRef != 0 {
			s += x.dedup.touch(r.userRef)
		}
	}
	for i := range reqs {
		r := &reqs[i]
		switch r.kind {
		case KindDeposit, KindWithdrawal:
			s += x.peek(r.a)
		case KindTransfer:
			s += x.peek(r.a) + x.peek(r.b)
		}
	}
	x.sink += s
}

// peek loads account a's working cells. If a's entry is not at its home,
// they are the system account's.
func (x *executor) peek(a uint64) int64 { return x.work[cellsPerAccount*x.accts.peek(a)] }

// execute runs r as transaction id at time ts and fills rec. On failure the
// state is left exactly as it was and rec has no entries.
//
// Checks run in a fixed order, which the model test mirrors: Duplicate;
// then for a CreateAccount the Exists* reasons and AccountsLimitReached;
// for a composite EntryLimitExceeded and ZeroSumViolation, then per leg in
// order AccountNotFound, the closed reason of the leg's side,
// AccountsMustHaveSameLedger, the overflows and the limits; for the others
// AccountNotFound (debit account first), DebitAccountAlreadyClosed,
// CreditAccountAlreadyClosed, AccountsMustHaveSameLedger, OverflowsDebitsPosted,
// OverflowsCreditsPosted, ExceedsCredits, ExceedsDebits.
func (x *executor) execute(r *request, id uint64, ts int64, rec *txRecord) {
	*rec = txRecord{id: id, userRef: r.userRef, ts: ts, kind: r.kind, w: r.w, wlevel: r.wlevel}
	if x.due && (!x.inChain || x.chainHead) {
		x.expire(id, ts, rec)
	}
	if r.chainOpen {
		rec.fail = LinkedEventChainOpen
		rec.setRequest(r)
		x.remember(id, r.userRef)
		return
	}
	if r.userRef != 0 {
		if o, dup := x.dedup.lookup(id, r.userRef); dup {
			rec.fail, rec.orig = Duplicate, o
			if r.kind == KindCreateAccount {
				rec.setAccount(r.account())
			}
			return
		}
		x.dedup.add(id, r.userRef)
	}
	switch r.kind {
	case KindCreateAccount:
		m := r.account()
		rec.fail = x.createAccount(&m)
		rec.setAccount(m)
	case KindDeposit:
		rec.fail = x.transfer(SystemAccount, r.a, r.amount, rec)
	case KindWithdrawal:
		rec.fail = x.transfer(r.a, SystemAccount, r.amount, rec)
	case KindTransfer:
		rec.setTransfer(r)
		if r.tflags() != 0 {
			rec.fail = x.flagged(r, id, ts, rec)
		} else {
			rec.fail = x.transfer(r.a, r.b, r.amount, rec)
		}
	case KindComposite:
		rec.fail = x.composite(r, rec)
	}
}

func (x *executor) createAccount(m *acctMeta) FailReason {
	if info, ok := x.lookup(m.id); ok {
		return existsReason(x.meta(infoSlot(info)), m)
	}
	if x.accts.n+uint64(len(x.tent)) == uint64(len(x.accts.meta)) {
		return AccountsLimitReached
	}
	if x.inChain {
		x.tent = append(x.tent, *m)
	} else {
		x.accts.insert(*m)
	}
	return OK
}

// lookup is accts.lookup, seeing the accounts of the chain being executed.
func (x *executor) lookup(id uint64) (uint64, bool) {
	if info, ok := x.accts.lookup(id); ok {
		return info, true
	}
	for i := range x.tent {
		if x.tent[i].id == id {
			info := packInfo(x.accts.n+uint64(i), &x.tent[i])
			if i < len(x.tentClosed) && x.tentClosed[i] { // by a closing transfer of the chain
				info |= uint64(Closed) << 28
			}
			return info, true
		}
	}
	return 0, false
}

// meta returns slot s's account, a chain's tentative one included.
func (x *executor) meta(s uint64) *acctMeta {
	if s < x.accts.n {
		return &x.accts.meta[s]
	}
	return &x.tent[s-x.accts.n]
}

// executeChain runs the linked chain reqs as transactions first.. at ts into
// recs. The first member that fails keeps its reason; then every member
// before it is rolled back (its entries undone in reverse, its accounts
// never entered the table) and fails with LinkedEventFailed, and every
// member after it fails with LinkedEventFailed without being evaluated.
func (x *executor) executeChain(reqs []request, first uint64, ts int64, recs []txRecord) {
	x.inChain = true
	defer func() { x.inChain, x.tent, x.tentClosed, x.undo = false, x.tent[:0], x.tentClosed[:0], x.undo[:0] }()
	failed := -1
	for i := range reqs {
		x.chainHead = i == 0 // the expiry scan runs before the chain, never inside it
		x.execute(&reqs[i], first+uint64(i), ts, &recs[i])
		if recs[i].fail != OK {
			failed = i
			break
		}
	}
	if failed < 0 {
		for i, m := range x.tent {
			s := x.accts.insert(m)
			if i < len(x.tentClosed) && x.tentClosed[i] {
				x.accts.setClosed(s, true)
			}
		}
		return
	}
	// Undo in reverse: the members' entries (each restores the value its
	// cell had before it; the first member's expiry releases came before
	// all of them and stay), then their book changes.
	for j := failed - 1; j >= 0; j-- {
		r := &recs[j]
		es := r.entries()
		for e := len(es) - 1; e >= 0; e-- {
			x.setCell(uint64(es[e].cell), uint64(es[e].value-es[e].delta))
		}
		r.fail, r.n = LinkedEventFailed, 0
		if r.extra != nil {
			if r.extra.entries = nil; len(r.extra.expired) == 0 {
				r.extra = nil
			}
		}
		if r.kind != KindCreateAccount {
			r.inline = [2]cellEntry{}
		}
	}
	x.rollbackBook()
	for j := failed + 1; j < len(reqs); j++ {
		q := &reqs[j]
		recs[j] = txRecord{id: first + uint64(j), userRef: q.userRef, ts: ts, kind: q.kind, fail: LinkedEventFailed, w: q.w, wlevel: q.wlevel}
		recs[j].setRequest(q)
		x.remember(first+uint64(j), q.userRef)
	}
}

// remember records ref as used by transaction id without a duplicate check:
// the UserRef of a chain member never evaluated. Every transaction that is
// not a Duplicate is remembered, as recovery and the Snapshotter's window
// count them.
func (x *executor) remember(id, ref uint64) {
	if ref != 0 {
		x.dedup.fifo.trim(id, x.dedup.forget)
		x.dedup.add(id, ref)
	}
}

// existsReason compares a CreateAccount with the account of the same id.
func existsReason(have, want *acctMeta) FailReason {
	switch {
	case have.flags != want.flags:
		return ExistsWithDifferentFlags
	case have.userData != want.userData:
		return ExistsWithDifferentUserData
	case have.ledger != want.ledger:
		return ExistsWithDifferentLedger
	case have.code != want.code:
		return ExistsWithDifferentCode
	}
	return Exists
}

// sameLedger reports whether a transfer between accounts of infos d and c
// stays in one ledger; the system account (ledger 0) belongs to every one.
func sameLedger(d, c uint64) bool {
	dl, cl := infoLedger(d), infoLedger(c)
	return dl == 0 || cl == 0 || dl == cl
}

// exceeds reports whether a + b + amt > limit, without overflow: a and b
// are columns (below 2^63), so a + b fits a uint64.
func exceeds(a, b, amt, limit uint64) bool {
	s := a + b
	return s > limit || amt > limit-s
}

// transfer posts amt (0 < amt < 2^63) from account from to account to
// (from != to).
func (x *executor) transfer(from, to, amt uint64, rec *txRecord) FailReason {
	d, ok := x.lookup(from)
	if !ok {
		return AccountNotFound
	}
	c, ok := x.lookup(to)
	if !ok {
		return AccountNotFound
	}
	if infoHas(d, Closed) {
		return DebitAccountAlreadyClosed
	}
	if infoHas(c, Closed) {
		return CreditAccountAlreadyClosed
	}
	if !sameLedger(d, c) {
		return AccountsMustHaveSameLedger
	}
	if rec.kind == KindTransfer {
		l := max(infoLedger(d), infoLedger(c)) // one of them, or both equal
		if rec.ledger != 0 && rec.ledger != l {
			return TransferMustHaveTheSameLedgerAsAccounts
		}
		rec.ledger = l
	}
	ds, cs := infoSlot(d), infoSlot(c)
	dv, cv := x.cols(ds), x.cols(cs)
	if uint64(dv[DebitsPosted]) > maxColumn-amt {
		return OverflowsDebitsPosted
	}
	if uint64(cv[CreditsPosted]) > maxColumn-amt {
		return OverflowsCreditsPosted
	}
	if infoHas(d, DebitsMustNotExceedCredits) &&
		exceeds(uint64(dv[DebitsPosted]), uint64(dv[DebitsPending]), amt, uint64(dv[CreditsPosted])) {
		return ExceedsCredits
	}
	if infoHas(c, CreditsMustNotExceedDebits) &&
		exceeds(uint64(cv[CreditsPosted]), uint64(cv[CreditsPending]), amt, uint64(cv[DebitsPosted])) {
		return ExceedsDebits
	}
	// Every check passed: a failed transfer changes nothing.
	dv[DebitsPosted] += int64(amt)
	cv[CreditsPosted] += int64(amt)
	rec.n = 2
	rec.inline = [2]cellEntry{
		{acct: from, delta: int64(amt), value: dv[DebitsPosted], cell: uint32(cell(ds, DebitsPosted)), col: DebitsPosted},
		{acct: to, delta: int64(amt), value: cv[CreditsPosted], cell: uint32(cell(cs, CreditsPosted)), col: CreditsPosted},
	}
	return OK
}

// composite computes every leg's resulting column first (an account may
// repeat: its columns are then the latest earlier leg's result) and changes
// the working state only once all legs pass.
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
	entries := make([]cellEntry, len(legs))
	// get is a cell's value as of the legs before i.
	get := func(i int, c uint64) int64 {
		for j := i - 1; j >= 0; j-- {
			if uint64(entries[j].cell) == c {
				return entries[j].value
			}
		}
		return x.value(c)
	}
	var ledger uint32 // of the first non-system account
	for i, l := range legs {
		info, ok := x.lookup(l.Account)
		if !ok {
			return AccountNotFound
		}
		s := infoSlot(info)
		if infoHas(info, Closed) {
			if l.Delta < 0 {
				return DebitAccountAlreadyClosed
			}
			return CreditAccountAlreadyClosed
		}
		if s != 0 {
			if ledger == 0 {
				ledger = infoLedger(info)
			} else if infoLedger(info) != ledger {
				return AccountsMustHaveSameLedger
			}
		}
		col, amt := CreditsPosted, uint64(l.Delta)
		if l.Delta < 0 {
			col, amt = DebitsPosted, -uint64(l.Delta)
		}
		c := cell(s, col)
		cur := uint64(get(i, c))
		if cur > maxColumn-amt {
			if col == DebitsPosted {
				return OverflowsDebitsPosted
			}
			return OverflowsCreditsPosted
		}
		nv := int64(cur + amt)
		entries[i] = cellEntry{acct: l.Account, delta: int64(amt), value: nv, cell: uint32(c), col: col}
		if s == 0 {
			continue
		}
		// The account's columns after this leg.
		dp, cp := uint64(get(i+1, cell(s, DebitsPosted))), uint64(get(i+1, cell(s, CreditsPosted)))
		switch {
		case r.flags&NoNegative != 0 && dp > cp:
			return ExceedsCredits
		case col == DebitsPosted && infoHas(info, DebitsMustNotExceedCredits) && exceeds(dp, uint64(x.value(cell(s, DebitsPending))), 0, cp):
			return ExceedsCredits
		case col == CreditsPosted && infoHas(info, CreditsMustNotExceedDebits) && exceeds(cp, uint64(x.value(cell(s, CreditsPending))), 0, dp):
			return ExceedsDebits
		}
	}
	for _, e := range entries {
		x.setCell(uint64(e.cell), uint64(e.value))
	}
	rec.setEntries(entries)
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

// sub subtracts d (d = MinInt64 too: -d wraps to itself, added as 2^63).
func (s *sum128) sub(d int64) {
	var b uint64
	s.lo, b = bits.Sub64(s.lo, uint64(d), 0)
	s.hi -= int64(b) + d>>63
}

func (s *sum128) zero() bool { return s.hi == 0 && s.lo == 0 }
