package ledger

import (
	"context"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// model is an independent re-statement of the ledger's rules: a map of
// accounts, big-integer arithmetic instead of overflow checks, a plain map
// for idempotency. It knows nothing of slots or cells.
type model struct {
	accts       map[uint64]*mAcct
	maxAccounts int
	firstUse    map[uint64]uint64 // UserRef -> id of the last non-duplicate use
	window      uint64
	maxEntries  int
	pending     map[uint64]*mPending // by the pending transfer's id
	ts          int64                // the timestamp of the transactions being applied
}

// mPending is a pending transfer of the model.
type mPending struct {
	id, from, to, amount uint64
	expires              int64 // 0: never
	ledger               uint32
	code                 uint16
	userData             uint64
	flags                TransferFlags
	state                pendingState
}

type mAcct struct {
	id       uint64
	ledger   uint32
	code     uint16
	flags    AccountFlags
	userData [2]uint64
	col      [numColumns]uint64
	closedBy uint64 // the closing transfer that closed it, 0 if none
}

func (a *mAcct) closed() bool { return a.flags&Closed != 0 || a.closedBy != 0 }

func newModel(maxAccounts int, window uint64) *model {
	return &model{accts: map[uint64]*mAcct{SystemAccount: {}}, maxAccounts: maxAccounts, firstUse: map[uint64]uint64{},
		window: window, maxEntries: DefaultMaxEntries, pending: map[uint64]*mPending{}}
}

type outcome struct {
	fail    FailReason
	dupOf   uint64
	entries []Entry
	expired []TxID
	xfer    xferFields // a transfer's fields as executed (not for a Duplicate)
}

var maxCol = new(big.Int).SetUint64(math.MaxInt64)

// over reports whether the sum of vs exceeds limit.
func over(limit uint64, vs ...uint64) bool {
	s := new(big.Int)
	for _, v := range vs {
		s.Add(s, new(big.Int).SetUint64(v))
	}
	return s.Cmp(new(big.Int).SetUint64(limit)) > 0
}

func (m *model) apply(id uint64, op Op) outcome {
	var ref uint64
	switch o := op.(type) {
	case CreateAccount:
		ref = o.UserRef
	case Deposit:
		ref = o.UserRef
	case Withdrawal:
		ref = o.UserRef
	case Transfer:
		ref = o.UserRef
	case Composite:
		ref = o.UserRef
	}
	if ref != 0 {
		if orig, ok := m.firstUse[ref]; ok && id-orig <= m.window {
			return outcome{fail: Duplicate, dupOf: orig}
		}
		m.firstUse[ref] = id
	}
	switch o := op.(type) {
	case CreateAccount:
		return outcome{fail: m.create(o)}
	case Deposit:
		return m.post(SystemAccount, o.Account, o.Amount)
	case Withdrawal:
		return m.post(o.Account, SystemAccount, o.Amount)
	case Transfer:
		out := m.transfer(id, o)
		if out.fail == Duplicate {
			out.xfer = xferFields{}
		}
		return out
	case Composite:
		return m.composite(o)
	}
	panic("unreachable")
}

// transfer applies a Transfer of any flags.
func (m *model) transfer(id uint64, o Transfer) outcome {
	x := xferFields{ledger: o.Ledger, code: o.Code, flags: o.Flags, userData: o.UserData, timeout: o.Timeout, pendingID: uint64(o.PendingID)}
	if o.Flags&(PostPendingTransfer|VoidPendingTransfer) != 0 {
		return m.resolve(id, o, x)
	}
	d, c := m.accts[o.From], m.accts[o.To]
	fail := func(f FailReason) outcome { return outcome{fail: f, xfer: x} }
	switch {
	case d == nil || c == nil:
		return fail(AccountNotFound)
	case d.closed():
		return fail(DebitAccountAlreadyClosed)
	case c.closed():
		return fail(CreditAccountAlreadyClosed)
	case o.From != SystemAccount && o.To != SystemAccount && d.ledger != c.ledger:
		return fail(AccountsMustHaveSameLedger)
	}
	l := max(d.ledger, c.ledger)
	if o.Ledger != 0 && o.Ledger != l {
		return fail(TransferMustHaveTheSameLedgerAsAccounts)
	}
	x.ledger = l
	amt := new(big.Int).SetUint64(o.Amount)
	avail := func(limit, a, b uint64) *big.Int {
		r := new(big.Int).Sub(new(big.Int).SetUint64(limit), new(big.Int).Add(new(big.Int).SetUint64(a), new(big.Int).SetUint64(b)))
		if r.Sign() < 0 {
			r.SetInt64(0)
		}
		return r
	}
	if o.Flags&BalancingDebit != 0 {
		if r := avail(d.col[CreditsPosted], d.col[DebitsPosted], d.col[DebitsPending]); r.Cmp(amt) < 0 {
			amt = r
		}
		if amt.Sign() == 0 {
			return fail(ExceedsCredits)
		}
	}
	if o.Flags&BalancingCredit != 0 {
		if r := avail(c.col[DebitsPosted], c.col[CreditsPosted], c.col[CreditsPending]); r.Cmp(amt) < 0 {
			amt = r
		}
		if amt.Sign() == 0 {
			return fail(ExceedsDebits)
		}
	}
	a := amt.Uint64()
	dcol, ccol := DebitsPosted, CreditsPosted
	odf, ocf := OverflowsDebitsPosted, OverflowsCreditsPosted
	if o.Flags&Pending != 0 {
		dcol, ccol, odf, ocf = DebitsPending, CreditsPending, OverflowsDebitsPending, OverflowsCreditsPending
	}
	switch {
	case over(math.MaxInt64, d.col[dcol], a):
		return fail(odf)
	case over(math.MaxInt64, c.col[ccol], a):
		return fail(ocf)
	case d.flags&DebitsMustNotExceedCredits != 0 && over(d.col[CreditsPosted], d.col[DebitsPosted], d.col[DebitsPending], a):
		return fail(ExceedsCredits)
	case c.flags&CreditsMustNotExceedDebits != 0 && over(c.col[DebitsPosted], c.col[CreditsPosted], c.col[CreditsPending], a):
		return fail(ExceedsDebits)
	}
	d.col[dcol] += a
	c.col[ccol] += a
	if o.Flags&Pending != 0 {
		p := &mPending{id: id, from: o.From, to: o.To, amount: a, ledger: l, code: o.Code, userData: o.UserData, flags: o.Flags, state: pendingOpen}
		if o.Timeout != 0 {
			p.expires = m.ts + int64(o.Timeout)*1e9
		}
		m.pending[id] = p
		if o.Flags&ClosingDebit != 0 {
			d.closedBy = id
		}
		if o.Flags&ClosingCredit != 0 {
			c.closedBy = id
		}
	}
	return outcome{xfer: x, entries: []Entry{
		{Account: o.From, Column: dcol, Delta: int64(a), Value: int64(d.col[dcol])},
		{Account: o.To, Column: ccol, Delta: int64(a), Value: int64(c.col[ccol])},
	}}
}

// resolve applies a post or void.
func (m *model) resolve(id uint64, o Transfer, x xferFields) outcome {
	fail := func(f FailReason) outcome { return outcome{fail: f, xfer: x} }
	p := m.pending[uint64(o.PendingID)]
	switch {
	case p == nil:
		return fail(PendingTransferNotFound)
	case p.state == pendingPosted:
		return fail(PendingTransferAlreadyPosted)
	case p.state == pendingVoided:
		return fail(PendingTransferAlreadyVoided)
	case p.state == pendingExpired || p.expires != 0 && p.expires <= m.ts:
		return fail(PendingTransferExpired)
	case o.From != 0 && o.From != p.from:
		return fail(PendingTransferHasDifferentDebitAccountID)
	case o.To != 0 && o.To != p.to:
		return fail(PendingTransferHasDifferentCreditAccountID)
	case o.Ledger != 0 && o.Ledger != p.ledger:
		return fail(PendingTransferHasDifferentLedger)
	case o.Code != 0 && o.Code != p.code:
		return fail(PendingTransferHasDifferentCode)
	}
	d, c := m.accts[p.from], m.accts[p.to]
	post := o.Flags&PostPendingTransfer != 0
	amt := o.Amount
	if post {
		if amt == 0 {
			amt = p.amount
		}
		switch {
		case amt > p.amount:
			return fail(ExceedsPendingTransferAmount)
		case over(math.MaxInt64, d.col[DebitsPosted], amt):
			return fail(OverflowsDebitsPosted)
		case over(math.MaxInt64, c.col[CreditsPosted], amt):
			return fail(OverflowsCreditsPosted)
		}
	} else if amt != 0 && amt != p.amount {
		return fail(PendingTransferHasDifferentAmount)
	}
	x.ledger, x.code = p.ledger, p.code
	if x.userData == 0 {
		x.userData = p.userData
	}
	d.col[DebitsPending] -= p.amount
	c.col[CreditsPending] -= p.amount
	es := []Entry{{Account: p.from, Column: DebitsPending, Delta: -int64(p.amount), Value: int64(d.col[DebitsPending])},
		{Account: p.to, Column: CreditsPending, Delta: -int64(p.amount), Value: int64(c.col[CreditsPending])}}
	if post {
		d.col[DebitsPosted] += amt
		c.col[CreditsPosted] += amt
		es = append(es, Entry{Account: p.from, Column: DebitsPosted, Delta: int64(amt), Value: int64(d.col[DebitsPosted])},
			Entry{Account: p.to, Column: CreditsPosted, Delta: int64(amt), Value: int64(c.col[CreditsPosted])})
		p.state = pendingPosted
	} else {
		p.state = pendingVoided
		m.reopen(p)
	}
	return outcome{xfer: x, entries: es}
}

// reopen opens the accounts the closing transfer p closed (voided or
// expired).
func (m *model) reopen(p *mPending) {
	for _, a := range []uint64{p.from, p.to} {
		if acct := m.accts[a]; acct.closedBy == p.id {
			acct.closedBy = 0
		}
	}
}

// expire releases up to maxExpiryPerTx pending transfers expired by m.ts,
// in (expiry, id) order, as the scan before a transaction does.
func (m *model) expire() []TxID {
	var due []*mPending
	for _, p := range m.pending {
		if p.state == pendingOpen && p.expires != 0 && p.expires <= m.ts {
			due = append(due, p)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		return due[i].expires < due[j].expires || due[i].expires == due[j].expires && due[i].id < due[j].id
	})
	var out []TxID
	for _, p := range due[:min(len(due), maxExpiryPerTx)] {
		m.accts[p.from].col[DebitsPending] -= p.amount
		m.accts[p.to].col[CreditsPending] -= p.amount
		p.state = pendingExpired
		m.reopen(p)
		out = append(out, TxID(p.id))
	}
	return out
}

// copyState returns a deep copy of the accounts and pending transfers,
// which a failed chain restores.
func (m *model) copyState() (map[uint64]*mAcct, map[uint64]*mPending) {
	accts := make(map[uint64]*mAcct, len(m.accts))
	for id, a := range m.accts {
		cp := *a
		accts[id] = &cp
	}
	pend := make(map[uint64]*mPending, len(m.pending))
	for id, p := range m.pending {
		cp := *p
		pend[id] = &cp
	}
	return accts, pend
}

func (m *model) create(o CreateAccount) FailReason {
	if a, ok := m.accts[o.ID]; ok {
		switch {
		case a.flags != o.Flags:
			return ExistsWithDifferentFlags
		case a.userData != o.UserData:
			return ExistsWithDifferentUserData
		case a.ledger != o.Ledger:
			return ExistsWithDifferentLedger
		case a.code != o.Code:
			return ExistsWithDifferentCode
		}
		return Exists
	}
	if len(m.accts) == m.maxAccounts {
		return AccountsLimitReached
	}
	m.accts[o.ID] = &mAcct{id: o.ID, ledger: o.Ledger, code: o.Code, flags: o.Flags, userData: o.UserData}
	return OK
}

func (m *model) post(from, to, amt uint64) outcome {
	d, c := m.accts[from], m.accts[to]
	switch {
	case d == nil || c == nil:
		return outcome{fail: AccountNotFound}
	case d.closed():
		return outcome{fail: DebitAccountAlreadyClosed}
	case c.closed():
		return outcome{fail: CreditAccountAlreadyClosed}
	case from != SystemAccount && to != SystemAccount && d.ledger != c.ledger:
		return outcome{fail: AccountsMustHaveSameLedger}
	case over(math.MaxInt64, d.col[DebitsPosted], amt):
		return outcome{fail: OverflowsDebitsPosted}
	case over(math.MaxInt64, c.col[CreditsPosted], amt):
		return outcome{fail: OverflowsCreditsPosted}
	case d.flags&DebitsMustNotExceedCredits != 0 && over(d.col[CreditsPosted], d.col[DebitsPosted], d.col[DebitsPending], amt):
		return outcome{fail: ExceedsCredits}
	case c.flags&CreditsMustNotExceedDebits != 0 && over(c.col[DebitsPosted], c.col[CreditsPosted], c.col[CreditsPending], amt):
		return outcome{fail: ExceedsDebits}
	}
	d.col[DebitsPosted] += amt
	c.col[CreditsPosted] += amt
	return outcome{entries: []Entry{
		{Account: from, Column: DebitsPosted, Delta: int64(amt), Value: int64(d.col[DebitsPosted])},
		{Account: to, Column: CreditsPosted, Delta: int64(amt), Value: int64(c.col[CreditsPosted])},
	}}
}

func (m *model) composite(o Composite) outcome {
	if len(o.Legs) > m.maxEntries {
		return outcome{fail: EntryLimitExceeded}
	}
	sum := new(big.Int)
	for _, l := range o.Legs {
		sum.Add(sum, big.NewInt(l.Delta))
	}
	if sum.Sign() != 0 {
		return outcome{fail: ZeroSumViolation}
	}
	work := map[uint64]*mAcct{} // copies, changed leg by leg
	var ledger uint32
	var entries []Entry
	for _, l := range o.Legs {
		a := work[l.Account]
		if a == nil {
			orig := m.accts[l.Account]
			if orig == nil {
				return outcome{fail: AccountNotFound}
			}
			cp := *orig
			a = &cp
			work[l.Account] = a
		}
		if a.closed() {
			if l.Delta < 0 {
				return outcome{fail: DebitAccountAlreadyClosed}
			}
			return outcome{fail: CreditAccountAlreadyClosed}
		}
		if l.Account != SystemAccount {
			if ledger == 0 {
				ledger = a.ledger
			} else if a.ledger != ledger {
				return outcome{fail: AccountsMustHaveSameLedger}
			}
		}
		amt := new(big.Int).Abs(big.NewInt(l.Delta))
		col := CreditsPosted
		if l.Delta < 0 {
			col = DebitsPosted
		}
		nv := new(big.Int).Add(new(big.Int).SetUint64(a.col[col]), amt)
		if nv.Cmp(maxCol) > 0 {
			if col == DebitsPosted {
				return outcome{fail: OverflowsDebitsPosted}
			}
			return outcome{fail: OverflowsCreditsPosted}
		}
		a.col[col] = nv.Uint64()
		entries = append(entries, Entry{Account: l.Account, Column: col, Delta: amt.Int64(), Value: nv.Int64()})
		if l.Account == SystemAccount {
			continue
		}
		switch {
		case o.Flags&NoNegative != 0 && a.col[DebitsPosted] > a.col[CreditsPosted]:
			return outcome{fail: ExceedsCredits}
		case col == DebitsPosted && a.flags&DebitsMustNotExceedCredits != 0 && over(a.col[CreditsPosted], a.col[DebitsPosted], a.col[DebitsPending]):
			return outcome{fail: ExceedsCredits}
		case col == CreditsPosted && a.flags&CreditsMustNotExceedDebits != 0 && over(a.col[DebitsPosted], a.col[CreditsPosted], a.col[CreditsPending]):
			return outcome{fail: ExceedsDebits}
		}
	}
	for id, a := range work {
		m.accts[id] = a
	}
	return outcome{entries: entries}
}

// linkedOf reports whether op is linked.
func linkedOf(op Op) bool {
	switch o := op.(type) {
	case CreateAccount:
		return o.Linked
	case Deposit:
		return o.Linked
	case Withdrawal:
		return o.Linked
	case Transfer:
		return o.Linked
	case Composite:
		return o.Linked
	}
	return false
}

func withLinked(op Op) Op {
	switch o := op.(type) {
	case CreateAccount:
		o.Linked = true
		return o
	case Deposit:
		o.Linked = true
		return o
	case Withdrawal:
		o.Linked = true
		return o
	case Transfer:
		o.Linked = true
		return o
	case Composite:
		o.Linked = true
		return o
	}
	return op
}

// applyBatch applies one SubmitBatch whose first op is tx first: linked
// chains all or nothing (a copy of the accounts restored when a member
// fails; the UserRefs of the members evaluated stay remembered), an open
// chain at the end failing whole unevaluated.
func (m *model) applyBatch(first uint64, ops []Op) []outcome {
	out := make([]outcome, len(ops))
	for i := 0; i < len(ops); {
		end := i
		for end < len(ops) && linkedOf(ops[end]) {
			end++
		}
		if end == len(ops) { // open: every member fails, none evaluated
			for j := i; j < end; j++ {
				exp := m.expire() // each runs alone, after the scan
				out[j] = outcome{fail: LinkedEventChainOpen, expired: exp, xfer: xferOf(ops[j])}
				m.remember(first+uint64(j), ops[j])
			}
			break
		}
		if end == i { // not in a chain
			exp := m.expire()
			out[i] = m.apply(first+uint64(i), ops[i])
			out[i].expired = exp
			i++
			continue
		}
		exp := m.expire() // before the chain, never inside it
		saved, savedPending := m.copyState()
		failed := -1
		for j := i; j <= end; j++ {
			out[j] = m.apply(first+uint64(j), ops[j])
			if out[j].fail != OK {
				failed = j
				break
			}
		}
		if failed >= 0 {
			m.accts, m.pending = saved, savedPending
			for j := i; j <= end; j++ {
				if j != failed {
					out[j] = outcome{fail: LinkedEventFailed, xfer: out[j].xfer}
				}
				if j > failed {
					out[j].xfer = xferOf(ops[j])
					m.remember(first+uint64(j), ops[j])
				}
			}
		}
		out[i].expired = exp
		i = end + 1
	}
	return out
}

// xferOf is the fields a transfer's record carries when it is not
// evaluated.
func xferOf(op Op) xferFields {
	o, ok := op.(Transfer)
	if !ok {
		return xferFields{}
	}
	return xferFields{ledger: o.Ledger, code: o.Code, flags: o.Flags, userData: o.UserData, timeout: o.Timeout, pendingID: uint64(o.PendingID)}
}

// remember records the UserRef of a chain member never evaluated: it
// counts like any transaction that is not a duplicate.
func (m *model) remember(id uint64, op Op) {
	var ref uint64
	switch o := op.(type) {
	case CreateAccount:
		ref = o.UserRef
	case Deposit:
		ref = o.UserRef
	case Withdrawal:
		ref = o.UserRef
	case Transfer:
		ref = o.UserRef
	case Composite:
		ref = o.UserRef
	}
	if ref != 0 {
		m.firstUse[ref] = id
	}
}

// opGen makes random ops over a pool of sparse account ids, only some of
// which get created, in two ledgers.
type opGen struct {
	rng  *rand.Rand
	pool []uint64
	// pend are the ids of recent pending transfers generated (applied or
	// not), which posts and voids name.
	pend []uint64
}

func newOpGen(rng *rand.Rand, n int) *opGen {
	g := &opGen{rng: rng}
	for range n {
		g.pool = append(g.pool, 1+rng.Uint64()>>uint(rng.IntN(60)))
	}
	return g
}

func (g *opGen) acct() uint64 { return g.pool[g.rng.IntN(len(g.pool))] }

// op returns a random op, to be transaction id.
func (g *opGen) op(id uint64) Op {
	rng := g.rng
	if rng.IntN(4) == 0 {
		return g.twoPhase(id)
	}
	amount := func(huge bool) uint64 {
		if huge && rng.IntN(60) == 0 {
			return math.MaxInt64 - rng.Uint64N(1000) // provoke the overflows
		}
		return 1 + rng.Uint64N(1000)
	}
	var ref uint64
	if rng.IntN(4) == 0 {
		ref = 1 + rng.Uint64N(3000)
	}
	switch k := rng.IntN(20); {
	case k < 3:
		flags := []AccountFlags{0, DebitsMustNotExceedCredits, CreditsMustNotExceedDebits, History | DebitsMustNotExceedCredits, 0, Closed}[rng.IntN(6)]
		return CreateAccount{ID: g.acct(), Ledger: 1 + uint32(rng.IntN(2)), Code: uint16(rng.IntN(2)), Flags: flags,
			UserData: [2]uint64{0, uint64(rng.IntN(2))}, UserRef: ref}
	case k < 8:
		return Deposit{Account: g.acct(), Amount: amount(false), UserRef: ref}
	case k < 11:
		return Withdrawal{Account: g.acct(), Amount: amount(false), UserRef: ref}
	case k < 17:
		from, to := g.acct(), g.acct()
		if from == to {
			return Deposit{Account: to, Amount: amount(false), UserRef: ref}
		}
		return Transfer{From: from, To: to, Amount: amount(true), UserRef: ref}
	default:
		n := 2 + rng.IntN(18)
		legs := make([]Leg, n)
		var sum int64
		for i := range legs[:n-1] {
			d := int64(rng.Uint64N(2001)) - 1000
			if d == 0 {
				d = 1
			}
			a := g.acct()
			if rng.IntN(4) == 0 {
				a = SystemAccount
			}
			legs[i] = Leg{Account: a, Delta: d}
			sum += d
		}
		last := -sum
		if rng.IntN(10) == 0 || last == 0 {
			last = sum + 1 // does not net to zero
			if last == 0 {
				last = 1
			}
		}
		legs[n-1] = Leg{Account: g.acct(), Delta: last}
		var flags CompositeFlags
		if rng.IntN(2) == 0 {
			flags = NoNegative
		}
		return Composite{Legs: legs, Flags: flags, UserRef: ref}
	}
}

// twoPhase returns a random pending, post, void, balancing or closing
// transfer, to be transaction id. Posts and voids name recent pending
// transfers (at most 1,000 ids back, well inside the time the ledger
// remembers a resolved one), or none.
func (g *opGen) twoPhase(id uint64) Op {
	rng := g.rng
	for len(g.pend) > 0 && g.pend[0]+1000 < id {
		g.pend = g.pend[1:]
	}
	var ref uint64
	if rng.IntN(6) == 0 {
		ref = 1 + rng.Uint64N(3000)
	}
	from, to := g.acct(), g.acct()
	if from == to {
		to = g.pool[(rng.IntN(len(g.pool)-1)+1+indexOf(g.pool, from))%len(g.pool)]
	}
	amount := 1 + rng.Uint64N(500)
	if rng.IntN(80) == 0 {
		amount = math.MaxInt64 - rng.Uint64N(1000)
	}
	var code uint16
	if rng.IntN(3) == 0 {
		code = uint16(1 + rng.IntN(2))
	}
	ud := uint64(rng.IntN(3))
	switch k := rng.IntN(10); {
	case k < 4 || len(g.pend) == 0:
		f := Pending
		var timeout uint32
		if rng.IntN(2) == 0 {
			timeout = uint32(1 + rng.IntN(3))
		}
		switch rng.IntN(40) { // closing rarely: a posted closing transfer closes for good
		case 0:
			f |= ClosingDebit
		case 1:
			f |= ClosingCredit
		case 2, 3, 4:
			f |= BalancingDebit
		case 5, 6, 7:
			f |= BalancingCredit
		}
		g.pend = append(g.pend, id)
		var lg uint32
		if rng.IntN(8) == 0 {
			lg = uint32(1 + rng.IntN(2))
		}
		return Transfer{From: from, To: to, Amount: amount, Flags: f, Timeout: timeout, Code: code, UserData: ud, Ledger: lg, UserRef: ref}
	case k < 8:
		o := Transfer{Flags: PostPendingTransfer, PendingID: TxID(g.pend[rng.IntN(len(g.pend))]), UserRef: ref, UserData: ud}
		if k == 7 {
			o.Flags = VoidPendingTransfer
		}
		switch rng.IntN(10) {
		case 0:
			o.Amount = 1 + rng.Uint64N(300) // maybe more than held; a void's must be exact
		case 1:
			o.From = g.acct()
		case 2:
			o.To = g.acct()
		case 3:
			o.Code = code
		case 4:
			o.Ledger = uint32(1 + rng.IntN(2))
		case 5:
			o.PendingID = 1 << 40 // none
		}
		return o
	default:
		f := []TransferFlags{BalancingDebit, BalancingCredit, BalancingDebit | BalancingCredit}[rng.IntN(3)]
		return Transfer{From: from, To: to, Amount: amount, Flags: f, Code: code, UserData: ud, UserRef: ref}
	}
}

func indexOf(s []uint64, v uint64) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return 0
}

// TestModelRandomOps runs random batches of every op through the ledger
// and the model, and compares every result (from the WAL) and every
// account's columns; between rounds the ledger is closed and reopened, or
// crashed (a crash clone of its in-memory filesystem taken once the round
// is committed, which must recover to exactly the model's state). Refs are
// remembered by the in-memory window alone and by the durable index (its
// count limit equal to the window, so that the model's rule is the same).
func TestModelRandomOps(t *testing.T) {
	const window = 5000
	t.Run("window", func(t *testing.T) {
		testModelRandomOps(t, Config{DedupWindow: window, DedupRetention: -1}, window)
	})
	t.Run("index", func(t *testing.T) {
		testModelRandomOps(t, Config{DedupWindow: window, DedupRetentionTxs: window}, window)
	})
}

func testModelRandomOps(t *testing.T, cfg Config, window uint64) {
	const maxAccounts = 48
	rounds, perRound := 8, 12_000
	if testing.Short() {
		rounds, perRound = 4, 5_000
	}
	mem := vfs.NewCrashableMem()
	cfg.Dir, cfg.FS, cfg.MaxAccounts, cfg.SnapshotEvery, cfg.RingSize, cfg.WALSegmentSize = "model", mem, maxAccounts, 7_000, 4096, 1<<20
	var clock atomic.Int64 // the Transactor's clock: the model knows every timestamp
	clock.Store(1 << 60)
	cfg.now = clock.Load
	l, err := Open(cfg)
	require.NoError(t, err)
	defer func() { l.Close() }()

	rng := rand.New(rand.NewPCG(1, 2))
	gen := newOpGen(rng, 64) // more ids than fit: accounts_limit_reached
	m := newModel(maxAccounts, window)
	want := map[uint64]outcome{}
	fails := map[FailReason]int{}
	expiredSeen := 0
	next := uint64(1)
	batch := make([]Op, 0, 512)
	// A prelude that reaches the overflow edges for certain; the random
	// batches reach them only by chance.
	const pa, pb, pc = 1<<62 + 1, 1<<62 + 2, 1<<62 + 3
	prelude := []Op{CreateAccount{ID: pa, Ledger: 1}, CreateAccount{ID: pb, Ledger: 1}, CreateAccount{ID: pc, Ledger: 1},
		Transfer{From: pa, To: pb, Amount: math.MaxInt64}, Transfer{From: pc, To: pb, Amount: 1}, Transfer{From: pa, To: pc, Amount: 1},
		Transfer{From: pb, To: pc, Amount: math.MaxInt64}, Transfer{From: pb, To: pa, Amount: 1},
		Transfer{From: pa, To: pb, Amount: math.MaxInt64, Flags: Pending}, Transfer{From: pc, To: pb, Amount: 1, Flags: Pending},
		Transfer{From: pa, To: pc, Amount: 1, Flags: Pending}}
	m.ts = clock.Load()
	_, last, err := l.SubmitBatch(prelude)
	require.NoError(t, err)
	require.NoError(t, l.Wait(context.Background(), last, Computed))
	for _, o := range m.applyBatch(next, prelude) {
		want[next] = o
		next++
	}
	require.Equal(t, []FailReason{OverflowsCreditsPosted, OverflowsDebitsPosted, OK, OverflowsDebitsPosted, OK, OverflowsCreditsPending, OverflowsDebitsPending},
		[]FailReason{want[5].fail, want[6].fail, want[7].fail, want[8].fail, want[9].fail, want[10].fail, want[11].fail}, "the model's edges")
	for round := range rounds {
		start := next
		end := next + uint64(perRound)
		for next < end {
			batch = batch[:0]
			for k := 1 + rng.IntN(cap(batch)); k > 0 && next+uint64(len(batch)) < end; k-- {
				op := gen.op(next + uint64(len(batch)))
				if rng.IntN(8) == 0 { // chains of a few ops, some left open at the end
					op = withLinked(op)
				}
				batch = append(batch, op)
			}
			// Time passes between batches (timeouts cross), never inside
			// one: each batch waits for the previous to be executed.
			clock.Add(rng.Int64N(1_500_000_000))
			m.ts = clock.Load()
			first, last, err := l.SubmitBatch(batch)
			require.NoError(t, err)
			require.Equal(t, TxID(next), first)
			require.Equal(t, TxID(next+uint64(len(batch))-1), last)
			require.NoError(t, l.Wait(context.Background(), last, Computed))
			for _, o := range m.applyBatch(next, batch) {
				want[next] = o
				next++
			}
		}
		require.NoError(t, l.Wait(context.Background(), TxID(next-1), Snapshot))
		from := start
		if round == 0 {
			from = 1 // the prelude too
		}
		expiredSeen += checkModel(t, l, m, want, fails, from)

		if round%2 == 0 {
			require.NoError(t, l.Close())
		} else {
			crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rand.New(rand.NewPCG(uint64(round), 9))})
			require.NoError(t, l.Close())
			mem = crashed
			cfg.FS = mem
		}
		l, err = Open(cfg)
		require.NoError(t, err)
		x, err := l.Indexes()
		require.NoError(t, err)
		require.Equal(t, TxID(next-1), x.Committed, "round %d: every committed transaction recovered", round)
		checkModel(t, l, m, want, nil, next)
	}
	for _, f := range []FailReason{OK, ExceedsCredits, ExceedsDebits, AccountNotFound, ZeroSumViolation, EntryLimitExceeded,
		OverflowsDebitsPosted, OverflowsCreditsPosted, Duplicate, Exists, ExistsWithDifferentFlags, ExistsWithDifferentUserData,
		ExistsWithDifferentLedger, ExistsWithDifferentCode, AccountsLimitReached, AccountsMustHaveSameLedger,
		LinkedEventFailed, LinkedEventChainOpen, DebitAccountAlreadyClosed, CreditAccountAlreadyClosed,
		TransferMustHaveTheSameLedgerAsAccounts, PendingTransferNotFound, PendingTransferAlreadyPosted, PendingTransferAlreadyVoided,
		PendingTransferExpired, ExceedsPendingTransferAmount, PendingTransferHasDifferentAmount, PendingTransferHasDifferentDebitAccountID,
		PendingTransferHasDifferentCreditAccountID, PendingTransferHasDifferentLedger, PendingTransferHasDifferentCode,
		OverflowsDebitsPending, OverflowsCreditsPending} {
		require.Positive(t, fails[f], "no transaction failed with %v", f)
	}
	require.Positive(t, expiredSeen, "no pending transfer expired")
	t.Logf("fail reasons: %v; pending transfers expired by the scan: %d", fails, expiredSeen)
}

// checkModel compares the ledger's results from tx from on (counting their
// fail reasons into fails, if not nil) and every account's columns with
// the model.
func checkModel(t *testing.T, l *Ledger, m *model, want map[uint64]outcome, fails map[FailReason]int, from uint64) (expired int) {
	t.Helper()
	require.NoError(t, scanLedgerWAL(l, from, func(tx *walTx) error {
		w := want[tx.id]
		got := tx.result()
		require.Equal(t, w.fail, got.Fail, "tx %d", tx.id)
		require.Equal(t, TxID(w.dupOf), got.DupOf, "tx %d", tx.id)
		require.Equal(t, w.entries, got.Entries, "tx %d", tx.id)
		require.Equal(t, w.expired, got.Expired, "tx %d", tx.id)
		x := w.xfer
		if x.flags&(PostPendingTransfer|VoidPendingTransfer) == 0 {
			x.pendingID = 0
		}
		if x.flags&Pending == 0 {
			x.timeout = 0
		}
		require.Equal(t, x, xferFields{ledger: got.Ledger, code: got.Code, flags: got.Flags, userData: got.UserData,
			pendingID: uint64(got.PendingID), timeout: got.Timeout}, "tx %d", tx.id)
		if fails != nil {
			fails[got.Fail]++
		}
		expired += len(got.Expired)
		return nil
	}))
	var sums [numColumns]uint64
	for id, a := range m.accts {
		got, err := l.Lookup(id)
		require.NoError(t, err)
		flags := a.flags
		if a.closedBy != 0 {
			flags |= Closed
		}
		require.Equal(t, Account{ID: id, Ledger: a.ledger, Code: a.code, Flags: flags, UserData: a.userData,
			DebitsPosted: a.col[DebitsPosted], CreditsPosted: a.col[CreditsPosted],
			DebitsPending: a.col[DebitsPending], CreditsPending: a.col[CreditsPending]}, got, "account %d", id)
		for c := range sums {
			sums[c] += a.col[c]
		}
	}
	require.Equal(t, sums[DebitsPosted], sums[CreditsPosted])
	require.Equal(t, sums[DebitsPending], sums[CreditsPending])
	for _, id := range []uint64{7, 1 << 63} {
		if m.accts[id] == nil {
			_, err := l.Lookup(id)
			require.ErrorIs(t, err, ErrAccountNotFound)
		}
	}
	return expired
}
