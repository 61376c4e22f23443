package ledger

import (
	"fmt"
	"math"
)

// TxID identifies a transaction. Ids are assigned contiguously from 1 in the
// order the Transactor executes them; 0 is never a valid id.
type TxID uint64

// SystemAccount is the account money enters and leaves the ledger through.
const SystemAccount uint64 = 0

// MaxLegs is the most legs a Composite may have; more are refused at submit.
// Config.MaxEntries sets a lower, journaled limit (EntryLimitExceeded).
const MaxLegs = 255

// Op is an operation to submit: Deposit, Withdrawal, Transfer or Composite.
// The set is closed.
type Op interface{ isOp() }

// Deposit moves Amount from the system account to Account.
type Deposit struct {
	Account uint64
	Amount  uint64
	UserRef uint64 // idempotency key; 0 means none
}

// Withdrawal moves Amount from Account to the system account. It fails with
// InsufficientFunds if Account's balance would go negative.
type Withdrawal struct {
	Account uint64
	Amount  uint64
	UserRef uint64
}

// Transfer moves Amount from From to To. It fails with InsufficientFunds if
// From's balance would go negative.
type Transfer struct {
	From    uint64
	To      uint64
	Amount  uint64
	UserRef uint64
}

// Leg is one signed movement of a Composite.
type Leg struct {
	Account uint64
	Delta   int64
}

// CompositeFlags modify how a Composite executes.
type CompositeFlags uint8

// NoNegative makes a Composite fail with InsufficientFunds if any leg leaves
// a non-system account with a negative balance.
const NoNegative CompositeFlags = 1

// Composite applies all Legs atomically, in order. Its deltas must sum to
// zero (else ZeroSumViolation). Submit does not copy Legs: the caller must not
// modify the slice until the transaction is Computed.
type Composite struct {
	Legs    []Leg
	Flags   CompositeFlags
	UserRef uint64
}

func (Deposit) isOp()    {}
func (Withdrawal) isOp() {}
func (Transfer) isOp()   {}
func (Composite) isOp()  {}

// Kind is the type of a journaled transaction.
type Kind uint8

// Kinds, as stored in the WAL.
const (
	KindDeposit Kind = iota + 1
	KindWithdrawal
	KindTransfer
	KindComposite
)

var kindNames = [...]string{"invalid", "deposit", "withdrawal", "transfer", "composite"}

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
	kind    Kind
	flags   CompositeFlags
	a, b    uint64 // account (Deposit, Withdrawal); from, to (Transfer)
	amount  uint64
	userRef uint64
	legs    []Leg
	w       *opWaiter // non-nil for SubmitAndWait
	wlevel  Level     // the level w waits for
}

// prepare validates op against state-independent rules and fills r. Errors
// are sentinels; the caller wraps them in an *InputError.
func prepare(op Op, maxAccounts uint64, r *request) error {
	switch o := op.(type) {
	case Deposit:
		*r = request{kind: KindDeposit, a: o.Account, amount: o.Amount, userRef: o.UserRef}
		return checkSingle(o.Account, o.Amount, maxAccounts)
	case *Deposit:
		if o == nil {
			return ErrNilOp
		}
		return prepare(*o, maxAccounts, r)
	case Withdrawal:
		*r = request{kind: KindWithdrawal, a: o.Account, amount: o.Amount, userRef: o.UserRef}
		return checkSingle(o.Account, o.Amount, maxAccounts)
	case *Withdrawal:
		if o == nil {
			return ErrNilOp
		}
		return prepare(*o, maxAccounts, r)
	case Transfer:
		*r = request{kind: KindTransfer, a: o.From, b: o.To, amount: o.Amount, userRef: o.UserRef}
		if err := checkAmount(o.Amount); err != nil {
			return err
		}
		if o.From >= maxAccounts {
			return accountRange(o.From, maxAccounts)
		}
		if o.To >= maxAccounts {
			return accountRange(o.To, maxAccounts)
		}
		if o.From == o.To {
			return ErrSameAccount
		}
		return nil
	case *Transfer:
		if o == nil {
			return ErrNilOp
		}
		return prepare(*o, maxAccounts, r)
	case Composite:
		*r = request{kind: KindComposite, flags: o.Flags, legs: o.Legs, userRef: o.UserRef}
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
			if l.Account >= maxAccounts {
				return accountRange(l.Account, maxAccounts)
			}
			if l.Delta == 0 {
				return ErrZeroAmount
			}
		}
		return nil
	case *Composite:
		if o == nil {
			return ErrNilOp
		}
		return prepare(*o, maxAccounts, r)
	default:
		return ErrNilOp
	}
}

// accountRange is ErrAccountRange naming the account and the limit. It
// allocates, on the error path only.
func accountRange(account, maxAccounts uint64) error {
	return fmt.Errorf("%w: %d (MaxAccounts is %d)", ErrAccountRange, account, maxAccounts)
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

func checkSingle(account, amount, maxAccounts uint64) error {
	if err := checkAmount(amount); err != nil {
		return err
	}
	if account >= maxAccounts {
		return accountRange(account, maxAccounts)
	}
	if account == SystemAccount {
		return ErrSameAccount
	}
	return nil
}
