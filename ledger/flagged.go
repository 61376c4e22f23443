package ledger

// The Transactor's side of flagged transfers (see TransferFlags and
// pending.go): pending, post, void, balancing and closing transfers, and
// the expiry scan. Plain transfers stay on executor.transfer.

// bookUndo is one change to the book made by a member of the linked chain
// being executed, undone if the chain fails.
type bookUndo struct {
	p     pendingXfer // as it was before (resolved) or as added
	added bool
}

// beginRun tells the executor the timestamp of the run it starts with
// transaction next, and forgets resolved pending transfers past the
// retention.
func (x *executor) beginRun(next uint64, ts int64) {
	x.ts = ts
	if x.book != nil {
		x.book.prune(next, ts)
	}
	x.due = x.expiryDue(ts) // a pending transfer made in this run expires after ts
}

// expiryDue reports whether an open pending transfer may have expired by
// ts (the heap's top may be resolved already: expire skips it).
func (x *executor) expiryDue(ts int64) bool {
	b := x.book
	return b != nil && len(b.exp) > 0 && b.exp[0].at <= ts
}

// expire releases up to maxExpiryPerTx pending transfers expired by ts
// into rec, the record of transaction id, before it executes.
func (x *executor) expire(id uint64, ts int64, rec *txRecord) {
	var ex *recExtra
	for n := 0; n < maxExpiryPerTx && x.book.nextExpiry() <= ts; n++ {
		top := x.book.exp[0]
		p, _ := x.book.resolve(top.id, pendingExpired, ts, id)
		if ex == nil {
			ex = &recExtra{}
		}
		ex.expired = append(ex.expired, p.id)
		ex.exp = append(ex.exp, x.release(p.debit, p.dslot, DebitsPending, p.amount, id), x.release(p.credit, p.cslot, CreditsPending, p.amount, id))
		for _, s := range p.closes() {
			x.setClosed(s, false)
		}
	}
	if ex != nil {
		rec.extra = ex
	}
	x.due = x.expiryDue(ts)
}

// release takes amt off column col of account a (slot s) for transaction
// id and returns the entry.
func (x *executor) release(a, s uint64, col Column, amt, id uint64) cellEntry {
	c := cell(s, col)
	v := x.value(c) - int64(amt)
	x.setCell(c, uint64(v), id)
	return cellEntry{acct: a, delta: -int64(amt), value: v, cell: uint32(c), col: col}
}

// setClosed sets account slot s's Closed bit, a tentative one's (created
// by the chain being executed) included.
func (x *executor) setClosed(s uint64, on bool) {
	if s < x.accts.n {
		x.accts.setClosed(s, on)
		return
	}
	i := s - x.accts.n
	for len(x.tentClosed) <= int(i) {
		x.tentClosed = append(x.tentClosed, false)
	}
	x.tentClosed[i] = on
}

// flagged executes a transfer with flags.
func (x *executor) flagged(r *request, id uint64, ts int64, rec *txRecord) FailReason {
	if r.tflags()&resolving != 0 {
		return x.resolvePending(r, id, ts, rec)
	}
	return x.hold(r, id, ts, rec)
}

// hold executes a pending, balancing or closing transfer (not a post or
// void). Checks, in order: AccountNotFound (debit account first),
// DebitAccountAlreadyClosed, CreditAccountAlreadyClosed,
// AccountsMustHaveSameLedger, TransferMustHaveTheSameLedgerAsAccounts;
// then a balancing transfer takes at most what its account's limit allows
// (ExceedsCredits / ExceedsDebits if that is nothing); then the overflow
// of the columns it adds to (posted, or pending for a pending transfer),
// ExceedsCredits, ExceedsDebits.
func (x *executor) hold(r *request, id uint64, ts int64, rec *txRecord) FailReason {
	f := r.tflags()
	d, ok := x.lookup(r.a)
	if !ok {
		return AccountNotFound
	}
	c, ok := x.lookup(r.b)
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
	l := max(infoLedger(d), infoLedger(c))
	if rec.ledger != 0 && rec.ledger != l {
		return TransferMustHaveTheSameLedgerAsAccounts
	}
	rec.ledger = l
	ds, cs := infoSlot(d), infoSlot(c)
	var w workingPair
	dv, cv := x.loadPair(ds, cs, &w)
	amt := r.amount
	if f&BalancingDebit != 0 {
		if amt = min(amt, room(dv[CreditsPosted], dv[DebitsPosted], dv[DebitsPending])); amt == 0 {
			return ExceedsCredits
		}
	}
	if f&BalancingCredit != 0 {
		if amt = min(amt, room(cv[DebitsPosted], cv[CreditsPosted], cv[CreditsPending])); amt == 0 {
			return ExceedsDebits
		}
	}
	dcol, ccol := DebitsPosted, CreditsPosted
	if f&Pending != 0 {
		dcol, ccol = DebitsPending, CreditsPending
	}
	if uint64(dv[dcol]) > maxColumn-amt {
		if f&Pending != 0 {
			return OverflowsDebitsPending
		}
		return OverflowsDebitsPosted
	}
	if uint64(cv[ccol]) > maxColumn-amt {
		if f&Pending != 0 {
			return OverflowsCreditsPending
		}
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
	dv[dcol] += int64(amt)
	cv[ccol] += int64(amt)
	x.storePair(ds, cs, id, &w)
	rec.n = 2
	rec.inline = [2]cellEntry{
		{acct: r.a, delta: int64(amt), value: dv[dcol], cell: uint32(cell(ds, dcol)), col: dcol},
		{acct: r.b, delta: int64(amt), value: cv[ccol], cell: uint32(cell(cs, ccol)), col: ccol},
	}
	if f&Pending != 0 {
		p := pendingXfer{id: id, debit: r.a, credit: r.b, dslot: ds, cslot: cs, amount: amt, userData: r.userData,
			ledger: l, code: r.code(), flags: f}
		if t := r.timeout(); t != 0 {
			p.expires = ts + int64(t)*1e9
		}
		x.book.add(p)
		for _, s := range p.closes() {
			x.setClosed(s, true)
		}
		if x.inChain {
			x.undo = append(x.undo, bookUndo{p: p, added: true})
		}
	}
	return OK
}

// workingPair is where loadPair found two accounts' working columns (see
// executor.transfer): changed in place in their overlay slots, or in the
// copies here until storePair inserts them.
type workingPair struct {
	di, ci   uint64
	dok, cok bool
	dt, ct   [numColumns]int64
	dv, cv   *[numColumns]int64
}

// loadPair returns the working columns of slots ds and cs (ds != cs). A
// caller changes them only once every check passed, then calls storePair.
func (x *executor) loadPair(ds, cs uint64, w *workingPair) (dv, cv *[numColumns]int64) {
	w.di, w.dok, w.dv = x.working(ds, &w.dt)
	w.ci, w.cok, w.cv = x.working(cs, &w.ct)
	return w.dv, w.cv
}

// storePair records the changed columns of loadPair's slots after
// transaction id.
func (x *executor) storePair(ds, cs, id uint64, w *workingPair) {
	x.ov.touched(w.di, w.dok, ds, w.dv, id)
	if !w.dok && !w.cok && w.ci == w.di { // both probes ended at the slot ds just took
		w.ci, w.cok = x.ov.find(cs)
	}
	x.ov.touched(w.ci, w.cok, cs, w.cv, id)
}

// room is how much can be added to a and b (columns) before they pass
// limit: 0 if they are there already.
func room(limit, a, b int64) uint64 {
	used := uint64(a) + uint64(b) // below 2^64: columns are below 2^63
	if uint64(limit) <= used {
		return 0
	}
	return uint64(limit) - used
}

// resolvePending executes a post or void of the pending transfer
// r.pendingID(). Checks, in order: PendingTransferNotFound,
// PendingTransferAlreadyPosted, PendingTransferAlreadyVoided,
// PendingTransferExpired (resolved by the expiry scan, or expired by ts and
// not yet scanned), then each non-zero field against the pending
// transfer's: PendingTransferHasDifferentDebitAccountID, ...CreditAccountID,
// ...Ledger, ...Code; then the amount (a post: at most the pending
// amount, ExceedsPendingTransferAmount; a void: 0 or the pending amount,
// PendingTransferHasDifferentAmount); then a post's OverflowsDebitsPosted,
// OverflowsCreditsPosted. A post's or void's own accounts may be closed
// (a closing transfer's are): it releases what was held. Fields left 0
// take the pending transfer's, and the record carries them.
func (x *executor) resolvePending(r *request, id uint64, ts int64, rec *txRecord) FailReason {
	f := r.tflags()
	p, ok := x.book.m[r.pendingID()]
	if !ok {
		switch x.book.done[r.pendingID()].state {
		case pendingPosted:
			return PendingTransferAlreadyPosted
		case pendingVoided:
			return PendingTransferAlreadyVoided
		case pendingExpired:
			return PendingTransferExpired
		}
		return PendingTransferNotFound
	}
	switch {
	case p.expires != 0 && p.expires <= ts:
		return PendingTransferExpired
	case r.a != 0 && r.a != p.debit:
		return PendingTransferHasDifferentDebitAccountID
	case r.b != 0 && r.b != p.credit:
		return PendingTransferHasDifferentCreditAccountID
	case rec.ledger != 0 && rec.ledger != p.ledger:
		return PendingTransferHasDifferentLedger
	case rec.code != 0 && rec.code != p.code:
		return PendingTransferHasDifferentCode
	}
	var w workingPair
	dv, cv := x.loadPair(p.dslot, p.cslot, &w)
	amt := r.amount
	if f&PostPendingTransfer != 0 {
		if amt == 0 {
			amt = p.amount
		}
		if amt > p.amount {
			return ExceedsPendingTransferAmount
		}
		if uint64(dv[DebitsPosted]) > maxColumn-amt {
			return OverflowsDebitsPosted
		}
		if uint64(cv[CreditsPosted]) > maxColumn-amt {
			return OverflowsCreditsPosted
		}
	} else if amt != 0 && amt != p.amount {
		return PendingTransferHasDifferentAmount
	}
	rec.ledger, rec.code = p.ledger, p.code
	if rec.userData == 0 {
		rec.userData = p.userData
	}
	dv[DebitsPending] -= int64(p.amount)
	cv[CreditsPending] -= int64(p.amount)
	release := [2]cellEntry{
		{acct: p.debit, delta: -int64(p.amount), value: dv[DebitsPending], cell: uint32(cell(p.dslot, DebitsPending)), col: DebitsPending},
		{acct: p.credit, delta: -int64(p.amount), value: cv[CreditsPending], cell: uint32(cell(p.cslot, CreditsPending)), col: CreditsPending},
	}
	st := pendingVoided
	if f&PostPendingTransfer != 0 {
		st = pendingPosted
		dv[DebitsPosted] += int64(amt)
		cv[CreditsPosted] += int64(amt)
		ex := &postExtra{}
		ex.buf = [4]cellEntry{release[0], release[1],
			{acct: p.debit, delta: int64(amt), value: dv[DebitsPosted], cell: uint32(cell(p.dslot, DebitsPosted)), col: DebitsPosted},
			{acct: p.credit, delta: int64(amt), value: cv[CreditsPosted], cell: uint32(cell(p.cslot, CreditsPosted)), col: CreditsPosted}}
		ex.entries = ex.buf[:]
		if rec.extra != nil { // the expiry scan's, before this transaction
			ex.expired, ex.exp = rec.extra.expired, rec.extra.exp
		}
		rec.extra, rec.n = &ex.recExtra, 4
	} else {
		rec.n, rec.inline = 2, release
	}
	x.storePair(p.dslot, p.cslot, id, &w)
	x.book.resolve(p.id, st, ts, id)
	if st == pendingVoided {
		for _, s := range p.closes() {
			x.setClosed(s, false)
		}
	}
	if x.inChain {
		x.undo = append(x.undo, bookUndo{p: p})
	}
	return OK
}

// postExtra holds a post's four entries with their recExtra: one
// allocation.
type postExtra struct {
	recExtra
	buf [4]cellEntry
}

// rollbackBook undoes the book changes of a failed chain, newest first.
func (x *executor) rollbackBook() {
	for i := len(x.undo) - 1; i >= 0; i-- {
		u := &x.undo[i]
		if u.added {
			x.book.unadd(u.p)
			for _, s := range u.p.closes() {
				x.setClosed(s, false)
			}
			continue
		}
		x.book.unresolve(u.p)
		for _, s := range u.p.closes() {
			x.setClosed(s, true)
		}
	}
	x.undo = x.undo[:0]
}
