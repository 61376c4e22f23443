package ledger

// FailReason says why a transaction was rolled back. The zero value, OK,
// means it succeeded.
type FailReason uint8

// Fail reasons, as stored in the WAL.
const (
	OK FailReason = iota
	// InsufficientFunds: a debit would leave a non-system balance negative.
	InsufficientFunds
	// AccountNotFound is reserved: account ids are dense and every id below
	// MaxAccounts exists; ids out of range are refused at submit.
	AccountNotFound
	// ZeroSumViolation: a Composite's deltas do not sum to zero.
	ZeroSumViolation
	// EntryLimitExceeded: a Composite has more legs than Config.MaxEntries.
	EntryLimitExceeded
	// BalanceOverflow: a balance would leave the int64 range.
	BalanceOverflow
	// Duplicate: the UserRef was seen within the dedup window; Result.DupOf
	// names the original transaction.
	Duplicate
	numFailReasons
)

// failNames are the reasons' one spelling (snake_case) in HTTP, the
// binary protocol's docs, dump and metric labels.
var failNames = [...]string{"ok", "insufficient_funds", "account_not_found", "zero_sum_violation",
	"entry_limit_exceeded", "balance_overflow", "duplicate"}

// String returns the reason's snake_case name.
func (f FailReason) String() string {
	if f < numFailReasons {
		return failNames[f]
	}
	return "invalid"
}

// Entry is one immutable balance movement of a transaction.
type Entry struct {
	Account uint64
	Delta   int64
	Balance int64 // the account's balance after this entry
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
}

// txRecord is a computed transaction as it travels the Transactor -> WAL ->
// Snapshotter rings. Deposits, withdrawals and transfers keep their two
// entries inline; only composites allocate.
type txRecord struct {
	id      uint64
	userRef uint64
	dupOf   uint64
	ts      int64
	kind    Kind
	fail    FailReason
	n       uint16 // entry count
	inline  [2]Entry
	extra   []Entry // composites: all entries
	// w, if non-nil, is delivered by the stage that reaches wlevel. Other
	// stages must not touch w: once delivered it may be reused.
	w      *opWaiter
	wlevel Level
}

func (r *txRecord) entries() []Entry {
	if r.extra != nil {
		return r.extra
	}
	return r.inline[:r.n]
}

func (r *txRecord) result() Result {
	return Result{
		ID: TxID(r.id), Kind: r.kind, Fail: r.fail, UserRef: r.userRef, DupOf: TxID(r.dupOf),
		Timestamp: r.ts, Entries: append([]Entry(nil), r.entries()...),
	}
}
