package ledger

import (
	"math"
)

// TxID identifies a transaction. Ids are assigned contiguously from 1 in the
// order the Transactor executes them; 0 is never a valid id.
type TxID uint64

// SystemAccount is the account money enters and leaves the ledger through
// (Deposit, Withdrawal). It exists without being created, belongs to every
// ledger and has no flags; no other account has id 0.
const SystemAccount uint64 = 0

// MaxChain is the most ops a linked chain may have; a longer one is
// refused at submit (ErrChainLength). An op with Linked set is linked to the
// next op of its SubmitBatch: consecutive linked ops and the first unlinked
// op after them form a chain, which applies as a whole or not at all. If one
// member fails, it keeps its fail reason and every other member fails with
// LinkedEventFailed (members after it are not evaluated); a chain still open
// at the end of its batch (its last op linked) fails whole with
// LinkedEventChainOpen. The chain runs inside the Transactor, which rolls
// back a failed one's members itself: no lock, no second pass.
const MaxChain = 1024

// MaxLegs is the most legs a Composite may have; more are refused at submit.
// Config.MaxEntries sets a lower, journaled limit (EntryLimitExceeded).
const MaxLegs = 255

// Op is an operation to submit: CreateAccount, Deposit, Withdrawal,
// Transfer or Composite. The set is closed.
type Op interface{ isOp() }

// CreateAccount creates account ID (any id but 0) in Ledger (non-zero).
// An id that exists fails with Exists if every field is the same, else with
// the ExistsWithDifferent* reason of the first field that differs.
type CreateAccount struct {
	ID       uint64
	Ledger   uint32
	Code     uint16
	Flags    AccountFlags
	UserData [2]uint64
	UserRef  uint64
	Linked   bool // links this op to the next of its batch (see MaxChain)
}

// Deposit moves Amount from the system account to Account: the system
// account's debits_posted and Account's credits_posted grow by Amount.
type Deposit struct {
	Account uint64
	Amount  uint64
	UserRef uint64 // idempotency key; 0 means none
	Linked  bool   // links this op to the next of its batch (see MaxChain)
}

// Withdrawal moves Amount from Account to the system account. If Account
// has DebitsMustNotExceedCredits, it fails with ExceedsCredits when its
// debits would pass its credits.
type Withdrawal struct {
	Account uint64
	Amount  uint64
	UserRef uint64
	Linked  bool
}

// Transfer debits From and credits To by Amount. Both must be created
// accounts of the same ledger; each account's flags limit it. Flags make it
// a two-phase, balancing or closing transfer (see TransferFlags).
type Transfer struct {
	From    uint64
	To      uint64
	Amount  uint64
	UserRef uint64
	// Ledger, if not 0, must be the ledger of both accounts (else
	// TransferMustHaveTheSameLedgerAsAccounts); 0 takes theirs. The
	// journaled transfer carries the accounts' ledger either way.
	Ledger uint32
	// Code is the transfer's type, for the application (and queries).
	Code uint16
	// Flags: see TransferFlags.
	Flags TransferFlags
	// UserData is kept with the transfer, never read by the ledger: one
	// u64 that queries filter on (an order id, a reference).
	UserData uint64
	// PendingID names the pending transfer a PostPendingTransfer or
	// VoidPendingTransfer resolves: its TxID. Required with those flags,
	// refused without them.
	PendingID TxID
	// Timeout, for a Pending transfer, is the seconds after the pending
	// transfer's timestamp at which its hold expires; 0 never expires.
	// Refused without Pending.
	Timeout uint32
	Linked  bool
}

// Leg is one signed movement of a Composite: a negative Delta debits
// Account (debits_posted), a positive one credits it (credits_posted).
type Leg struct {
	Account uint64
	Delta   int64
}

// CompositeFlags modify how a Composite executes.
type CompositeFlags uint8

// NoNegative makes a Composite fail with ExceedsCredits if any leg leaves
// a non-system account with a negative posted balance.
const NoNegative CompositeFlags = 1

// Composite applies all Legs atomically, in order. Its deltas must sum to
// zero (else ZeroSumViolation). Submit does not copy Legs: the caller must not
// modify the slice until the transaction is Computed.
type Composite struct {
	Legs    []Leg
	Flags   CompositeFlags
	UserRef uint64
	Linked  bool
}

func (CreateAccount) isOp() {}
func (Deposit) isOp()       {}
func (Withdrawal) isOp()    {}
func (Transfer) isOp()      {}
func (Composite) isOp()     {}

// UserRefOf returns op's UserRef (its idempotency key), 0 for none or an
// op type it does not know. A client may retry an op whose outcome it
// does not know only with a non-zero one.
func UserRefOf(op Op) uint64 {
	switch o := op.(type) {
	case CreateAccount:
		return o.UserRef
	case Deposit:
		return o.UserRef
	case Withdrawal:
		return o.UserRef
	case Transfer:
		return o.UserRef
	case Composite:
		return o.UserRef
	case *CreateAccount:
		return o.UserRef
	case *Deposit:
		return o.UserRef
	case *Withdrawal:
		return o.UserRef
	case *Transfer:
		return o.UserRef
	case *Composite:
		return o.UserRef
	}
	return 0
}

// Kind is the type of a journaled transaction.
type Kind uint8

// Kinds, as stored in the WAL.
const (
	KindDeposit Kind = iota + 1
	KindWithdrawal
	KindTransfer
	KindComposite
	KindCreateAccount
	numKinds
)

// NumKinds is the number of kinds, the invalid 0 included: they are
// 0 .. NumKinds-1.
const NumKinds = int(numKinds)

var kindNames = [...]string{"invalid", "deposit", "withdrawal", "transfer", "composite", "create_account"}

// String returns the kind's lower-case name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

// request is an operation as it travels the Sequencer ring: flat, so that
// Submit copies it into a slot without boxing.
type request struct {
	kind  Kind
	flags CompositeFlags
	// linked: the op is linked to the next one (a chain member but the
	// last); chainOpen: the op is in a chain its batch left open.
	linked, chainOpen bool
	wlevel            Level  // the level w waits for
	a, b              uint64 // account (Deposit, Withdrawal); from, to (Transfer); id, user_data[0] (CreateAccount)
	// meta is a CreateAccount's ledger, code and account flags (its
	// user_data[1] is in amount), or a Transfer's ledger, code and
	// transfer flags: ledger | code<<32 | flags<<48. Packed so that every
	// request stays small (96 bytes): the Sequencer ring copies each one
	// twice.
	meta     uint64
	amount   uint64
	userRef  uint64
	userData uint64 // Transfer
	// aux is a Transfer's PendingID (post, void) or Timeout (pending):
	// the flags allow one of them at most.
	aux  uint64
	legs []Leg
	w    *opWaiter // non-nil for SubmitAndWait
}

// prepare validates op against state-independent rules and fills r. Errors
// are sentinels; the caller wraps them in an *InputError.
func prepare(op Op, r *request) error {
	switch o := op.(type) {
	case CreateAccount:
		*r = request{kind: KindCreateAccount, a: o.ID, b: o.UserData[0], amount: o.UserData[1], userRef: o.UserRef, linked: o.Linked,
			meta: uint64(o.Ledger) | uint64(o.Code)<<32 | uint64(o.Flags)<<48}
		switch {
		case o.ID == SystemAccount:
			return ErrAccountID
		case o.Ledger == 0:
			return ErrLedgerZero
		case o.Flags&^accountFlagsMask != 0:
			return ErrAccountFlags
		case o.Flags&DebitsMustNotExceedCredits != 0 && o.Flags&CreditsMustNotExceedDebits != 0:
			return ErrAccountFlags
		}
		return nil
	case *CreateAccount:
		if o == nil {
			return ErrNilOp
		}
		return prepare(*o, r)
	case Deposit:
		*r = request{kind: KindDeposit, a: o.Account, amount: o.Amount, userRef: o.UserRef, linked: o.Linked}
		return checkSingle(o.Account, o.Amount)
	case *Deposit:
		if o == nil {
			return ErrNilOp
		}
		return prepare(*o, r)
	case Withdrawal:
		*r = request{kind: KindWithdrawal, a: o.Account, amount: o.Amount, userRef: o.UserRef, linked: o.Linked}
		return checkSingle(o.Account, o.Amount)
	case *Withdrawal:
		if o == nil {
			return ErrNilOp
		}
		return prepare(*o, r)
	case Transfer:
		return prepareTransfer(&o, r)
	case *Transfer:
		if o == nil {
			return ErrNilOp
		}
		return prepare(*o, r)
	case Composite:
		*r = request{kind: KindComposite, flags: o.Flags, legs: o.Legs, userRef: o.UserRef, linked: o.Linked}
		if len(o.Legs) == 0 {
			return ErrNoLegs
		}
		if len(o.Legs) > MaxLegs {
			return ErrTooManyLegs
		}
		if o.Flags&^NoNegative != 0 {
			return ErrFlags
		}
		for _, l := range o.Legs {
			if l.Delta == 0 {
				return ErrZeroAmount
			}
		}
		return nil
	case *Composite:
		if o == nil {
			return ErrNilOp
		}
		return prepare(*o, r)
	default:
		return ErrNilOp
	}
}

func checkAmount(a uint64) error {
	if a == 0 {
		return ErrZeroAmount
	}
	if a > math.MaxInt64 {
		return ErrAmountRange
	}
	return nil
}

func checkSingle(account, amount uint64) error {
	if err := checkAmount(amount); err != nil {
		return err
	}
	if account == SystemAccount {
		return ErrSameAccount
	}
	return nil
}

// markChains checks the linked chains of a batch: each at most MaxChain
// ops, and the one its last op leaves open marked (all its members fail
// with LinkedEventChainOpen). It returns the index of a chain too long and
// ErrChainLength.
func markChains(reqs []request) (int, error) {
	start := 0
	for i := range reqs {
		if i-start+1 > MaxChain {
			return start, ErrChainLength
		}
		if !reqs[i].linked {
			start = i + 1
		}
	}
	for i := start; i < len(reqs); i++ {
		reqs[i].chainOpen = true
	}
	return 0, nil
}

// account returns a CreateAccount request's account.
func (r *request) account() acctMeta {
	return acctMeta{id: r.a, userData: [2]uint64{r.b, r.amount}, ledger: uint32(r.meta), code: uint16(r.meta >> 32), flags: AccountFlags(r.meta >> 48)}
}
