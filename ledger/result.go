package ledger

// FailReason says why a transaction was rolled back. The zero value, OK,
// means it succeeded.
type FailReason uint8

// Fail reasons, as stored in the WAL. Each has one snake_case name (String).
const (
	OK FailReason = iota
	// ExceedsCredits: the debit account has DebitsMustNotExceedCredits and
	// the transfer would take debits_pending + debits_posted above
	// credits_posted; or a NoNegative composite would leave a non-system
	// account's posted balance negative.
	ExceedsCredits
	// AccountNotFound: the op names an account that was never created.
	AccountNotFound
	// ZeroSumViolation: a Composite's deltas do not sum to zero.
	ZeroSumViolation
	// EntryLimitExceeded: a Composite has more legs than Config.MaxEntries.
	EntryLimitExceeded
	// OverflowsDebitsPosted: debits_posted would exceed 2^63-1.
	OverflowsDebitsPosted
	// OverflowsCreditsPosted: credits_posted would exceed 2^63-1.
	OverflowsCreditsPosted
	// Duplicate: the UserRef was seen within the dedup window; Result.DupOf
	// names the original transaction.
	Duplicate
	// ExceedsDebits: the credit account has CreditsMustNotExceedDebits and
	// the transfer would take credits_pending + credits_posted above
	// debits_posted.
	ExceedsDebits
	// Exists: CreateAccount of an id that exists with the same fields.
	Exists
	// ExistsWithDifferentFlags, ...UserData, ...Ledger, ...Code:
	// CreateAccount of an id that exists with other fields (checked in
	// this order).
	ExistsWithDifferentFlags
	ExistsWithDifferentUserData
	ExistsWithDifferentLedger
	ExistsWithDifferentCode
	// AccountsLimitReached: CreateAccount when Config.MaxAccounts accounts
	// (the system account included) exist.
	AccountsLimitReached
	// AccountsMustHaveSameLedger: a transfer or composite between accounts
	// of different ledgers (the system account belongs to every ledger).
	AccountsMustHaveSameLedger
	// LinkedEventFailed: another member of the op's linked chain failed;
	// nothing of the chain applied.
	LinkedEventFailed
	// LinkedEventChainOpen: the op's batch ended inside its linked chain
	// (its last op was linked); nothing of the chain applied.
	LinkedEventChainOpen
	// DebitAccountAlreadyClosed, CreditAccountAlreadyClosed: the account
	// the op debits (credits) has the Closed flag.
	DebitAccountAlreadyClosed
	CreditAccountAlreadyClosed
	// TransferMustHaveTheSameLedgerAsAccounts: a transfer's non-zero
	// Ledger is not its accounts' ledger.
	TransferMustHaveTheSameLedgerAsAccounts
	// PendingTransferNotFound: a post or void names no pending transfer
	// this ledger remembers (never one, or resolved longer ago than it
	// remembers, see Config.DedupRetention).
	PendingTransferNotFound
	// PendingTransferAlreadyPosted, PendingTransferAlreadyVoided,
	// PendingTransferExpired: a post or void names a pending transfer that
	// was posted, voided, or whose timeout passed.
	PendingTransferAlreadyPosted
	PendingTransferAlreadyVoided
	PendingTransferExpired
	// ExceedsPendingTransferAmount: a post's Amount is above the pending
	// transfer's.
	ExceedsPendingTransferAmount
	// PendingTransferHasDifferentAmount: a void's non-zero Amount is not
	// the pending transfer's.
	PendingTransferHasDifferentAmount
	// PendingTransferHasDifferentDebitAccountID, ...CreditAccountID,
	// ...Ledger, ...Code: a post or void names (non-zero) another From,
	// To, Ledger or Code than its pending transfer's (checked in this
	// order).
	PendingTransferHasDifferentDebitAccountID
	PendingTransferHasDifferentCreditAccountID
	PendingTransferHasDifferentLedger
	PendingTransferHasDifferentCode
	// OverflowsDebitsPending, OverflowsCreditsPending: a pending column
	// would exceed 2^63-1.
	OverflowsDebitsPending
	OverflowsCreditsPending
	numFailReasons
)

// failNames are the reasons' one spelling (snake_case) in HTTP, the
// binary protocol's docs, dump and metric labels.
var failNames = [...]string{"ok", "exceeds_credits", "account_not_found", "zero_sum_violation",
	"entry_limit_exceeded", "overflows_debits_posted", "overflows_credits_posted", "duplicate",
	"exceeds_debits", "exists", "exists_with_different_flags", "exists_with_different_user_data",
	"exists_with_different_ledger", "exists_with_different_code", "accounts_limit_reached",
	"accounts_must_have_same_ledger", "linked_event_failed", "linked_event_chain_open",
	"debit_account_already_closed", "credit_account_already_closed",
	"transfer_must_have_the_same_ledger_as_accounts", "pending_transfer_not_found",
	"pending_transfer_already_posted", "pending_transfer_already_voided", "pending_transfer_expired",
	"exceeds_pending_transfer_amount", "pending_transfer_has_different_amount",
	"pending_transfer_has_different_debit_account_id", "pending_transfer_has_different_credit_account_id",
	"pending_transfer_has_different_ledger", "pending_transfer_has_different_code",
	"overflows_debits_pending", "overflows_credits_pending"}

// String returns the reason's snake_case name.
func (f FailReason) String() string {
	if f < numFailReasons {
		return failNames[f]
	}
	return "invalid"
}

// FailReasonByName returns the reason whose String is s.
func FailReasonByName(s string) (FailReason, bool) {
	for f := OK; f < numFailReasons; f++ {
		if failNames[f] == s {
			return f, true
		}
	}
	return 0, false
}

// NumFailReasons is the number of fail reasons, OK included: they are
// 0 .. NumFailReasons-1.
const NumFailReasons = int(numFailReasons)

// Entry is one immutable movement of a transaction: Column of Account
// changed by Delta (negative when a held amount is released) to Value.
type Entry struct {
	Account uint64
	Delta   int64
	Value   int64 // the column after this entry, 0 .. 2^63-1
	Column  Column
}

// Result is the outcome of a transaction as the Transactor computed it.
type Result struct {
	ID        TxID
	Kind      Kind
	Fail      FailReason
	UserRef   uint64
	DupOf     TxID  // original transaction when Fail == Duplicate
	Timestamp int64 // Unix nanoseconds, taken by the Transactor
	Entries   []Entry
	// Account is the account a CreateAccount named (created, or found
	// existing), with zero columns; nil for other kinds.
	Account *Account
	// Transfer fields, of a KindTransfer that is not a Duplicate: as
	// executed, so Ledger is the accounts' ledger when the transfer named
	// none (or whatever it named, if it failed before its accounts were
	// found), and PendingID and Timeout are those of its flags.
	Ledger    uint32
	Code      uint16
	Flags     TransferFlags
	UserData  uint64
	PendingID TxID
	Timeout   uint32
	// Expired are the pending transfers whose timeout had passed and
	// whose holds the expiry scan released at this transaction's
	// timestamp, before it executed (see Pending); their release entries
	// are journaled with it but are not in Entries.
	Expired []TxID
}

// cellEntry is an Entry as the Transactor makes it: with the index of the
// column's cell in the balances, which the Snapshotter stores into.
type cellEntry struct {
	acct  uint64
	delta int64
	value int64
	cell  uint32 // accounts < 2^28, 4 cells each
	col   Column
}

func (e *cellEntry) public() Entry {
	return Entry{Account: e.acct, Delta: e.delta, Value: e.value, Column: e.col}
}

// txRecord is a computed transaction as it travels the Transactor -> WAL ->
// Snapshotter rings (136 bytes: each ring slot is one). Deposits,
// withdrawals and most transfers keep their two entries inline; composites
// and posts allocate theirs. A CreateAccount keeps its account in the
// inline space (see setAccount).
type txRecord struct {
	id      uint64
	userRef uint64
	// orig is the transaction this one names: the original of a
	// Duplicate, the pending transfer of a post or void.
	orig uint64
	ts   int64
	// A transfer's fields (KindTransfer, not a Duplicate).
	userData uint64
	ledger   uint32
	code     uint16
	tflags   TransferFlags
	kind     Kind
	fail     FailReason
	n        uint8 // entry count (composites: at most MaxLegs)
	wlevel   Level
	timeout  uint32
	inline   [2]cellEntry
	extra    *recExtra // nil unless the entries do not fit inline
	// w, if non-nil, is delivered by the stage that reaches wlevel. Other
	// stages must not touch w: once delivered it may be reused.
	w *opWaiter
}

// recExtra is what a record holds beyond its inline space.
type recExtra struct {
	entries []cellEntry // all the transaction's entries (composites, posts)
	// expired are the pending transfers the expiry scan released before
	// the transaction, exp their release entries (two each, in order).
	// They apply before the transaction's own entries and are not undone
	// with them.
	expired []uint64
	exp     []cellEntry
}

func (r *txRecord) entries() []cellEntry {
	if r.extra != nil && r.extra.entries != nil {
		return r.extra.entries
	}
	return r.inline[:r.n]
}

// setEntries makes es, which do not fit inline, the record's entries.
func (r *txRecord) setEntries(es []cellEntry) {
	if r.extra == nil {
		r.extra = &recExtra{}
	}
	r.extra.entries = es
	r.n = uint8(len(es))
}

// setTransfer copies a Transfer request's fields.
func (r *txRecord) setTransfer(q *request) {
	r.ledger, r.code, r.tflags, r.userData = q.ledger(), q.code(), q.tflags(), q.userData
	switch {
	case r.tflags&resolving != 0:
		r.orig = q.pendingID()
	case r.tflags&Pending != 0:
		r.timeout = q.timeout()
	}
}

// setRequest copies what a record of request q keeps when q is not
// evaluated (a chain member that did not run).
func (r *txRecord) setRequest(q *request) {
	switch q.kind {
	case KindCreateAccount:
		r.setAccount(q.account())
	case KindTransfer:
		r.setTransfer(q)
	}
}

// dupOf is a Duplicate's original.
func (r *txRecord) dupOf() uint64 {
	if r.fail == Duplicate {
		return r.orig
	}
	return 0
}

// hasTransfer reports whether r carries a transfer's fields.
func (r *txRecord) hasTransfer() bool { return r.kind == KindTransfer && r.fail != Duplicate }

// pendingID is the pending transfer a post or void names.
func (r *txRecord) pendingID() uint64 {
	if r.hasTransfer() && r.tflags&resolving != 0 {
		return r.orig
	}
	return 0
}

// setAccount stores a CreateAccount's account in the inline entry space,
// which that kind never uses for entries: the ring slots stay as small as
// they were.
func (r *txRecord) setAccount(m acctMeta) {
	r.inline[0] = cellEntry{acct: m.id, delta: int64(m.userData[0]), value: int64(m.userData[1]), cell: m.ledger}
	r.inline[1] = cellEntry{acct: uint64(m.code) | uint64(m.flags)<<16}
}

func (r *txRecord) account() acctMeta {
	return acctMeta{id: r.inline[0].acct, userData: [2]uint64{uint64(r.inline[0].delta), uint64(r.inline[0].value)},
		ledger: r.inline[0].cell, code: uint16(r.inline[1].acct), flags: AccountFlags(r.inline[1].acct >> 16)}
}

func (r *txRecord) result() Result {
	res := Result{ID: TxID(r.id), Kind: r.kind, Fail: r.fail, UserRef: r.userRef, DupOf: TxID(r.dupOf()), Timestamp: r.ts}
	if r.hasTransfer() {
		res.Ledger, res.Code, res.Flags, res.UserData, res.PendingID, res.Timeout =
			r.ledger, r.code, r.tflags, r.userData, TxID(r.pendingID()), r.timeout
	}
	if r.extra != nil && len(r.extra.expired) > 0 {
		res.Expired = make([]TxID, len(r.extra.expired))
		for i, id := range r.extra.expired {
			res.Expired[i] = TxID(id)
		}
	}
	if r.kind == KindCreateAccount {
		a := r.account().public()
		res.Account = &a
		return res
	}
	if es := r.entries(); len(es) > 0 {
		res.Entries = make([]Entry, len(es))
		for i := range es {
			res.Entries[i] = es[i].public()
		}
	}
	return res
}

func (m acctMeta) public() Account {
	return Account{ID: m.id, Ledger: m.ledger, Code: m.code, Flags: m.flags, UserData: m.userData}
}
