package ledger

import (
	"errors"
	"fmt"
)

// Sentinel errors. Input errors reach the caller wrapped in an *InputError;
// match them with errors.Is.
var (
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("ledger: closed")
	// ErrFailed is wrapped by the error every method returns after a stage
	// hit a storage error; the ledger must be closed and reopened.
	ErrFailed = errors.New("ledger: failed")

	// ErrNilOp: the operation is nil.
	ErrNilOp = errors.New("ledger: nil operation")
	// ErrZeroAmount: an amount or leg delta is zero.
	ErrZeroAmount = errors.New("ledger: zero amount")
	// ErrAmountRange: an amount does not fit an int64.
	ErrAmountRange = errors.New("ledger: amount out of range")
	// ErrAccountID: CreateAccount of id 0, the system account's.
	ErrAccountID = errors.New("ledger: account id 0 is the system account's")
	// ErrLedgerZero: CreateAccount with ledger 0.
	ErrLedgerZero = errors.New("ledger: ledger must not be zero")
	// ErrAccountFlags: unknown account flags, or both balance limits.
	ErrAccountFlags = errors.New("ledger: invalid account flags")
	// ErrAccountNotFound: Balance or Lookup of an account that does not
	// exist (or whose creation is not yet applied, see Lookup).
	ErrAccountNotFound = errors.New("ledger: account not found")
	// ErrSameAccount: a Transfer to itself, or a Deposit or Withdrawal on
	// the system account.
	ErrSameAccount = errors.New("ledger: source and destination are the same account")
	// ErrNoLegs: a Composite without legs.
	ErrNoLegs = errors.New("ledger: composite without legs")
	// ErrTooManyLegs: a Composite with more than MaxLegs legs.
	ErrTooManyLegs = errors.New("ledger: composite has too many legs")
	// ErrFlags: unknown Composite flags.
	ErrFlags = errors.New("ledger: unknown composite flags")
	// ErrTransferFlags: unknown transfer flags, or a combination no
	// transfer may have (see TransferFlags).
	ErrTransferFlags = errors.New("ledger: invalid transfer flags")
	// ErrPendingID: a post or void without PendingID, or a PendingID on
	// another transfer.
	ErrPendingID = errors.New("ledger: pending_id is required by post and void, and only by them")
	// ErrTimeout: a Timeout on a transfer that is not Pending.
	ErrTimeout = errors.New("ledger: timeout is for pending transfers only")
	// ErrChainLength: a linked chain of more than MaxChain ops.
	ErrChainLength = errors.New("ledger: linked chain too long")
	// ErrBatchSize: SubmitBatch with no ops or more than the Sequencer ring holds.
	ErrBatchSize = errors.New("ledger: batch size out of range")
	// ErrLevel: a wait level other than Computed, Committed or Snapshot.
	ErrLevel = errors.New("ledger: invalid wait level")

	// ErrNotCommitted: Result of a transaction that is not yet durable.
	ErrNotCommitted = errors.New("ledger: transaction not committed")
	// ErrNotFound: Result of a transaction that was never sequenced, or whose
	// WAL was deleted under the retention setting.
	ErrNotFound = errors.New("ledger: transaction not found")

	// ErrConfig is wrapped by every configuration error from Open.
	ErrConfig = errors.New("ledger: invalid config")
	// ErrIncompatible: the directory was created with another format version
	// or MaxAccounts.
	ErrIncompatible = errors.New("ledger: incompatible data directory")
	// ErrCorrupt is wrapped by every *CorruptError.
	ErrCorrupt = errors.New("ledger: corrupt data")
	// ErrNoLedger: Verify or Dump was given a directory that holds no
	// ledger store (empty, or something else).
	ErrNoLedger = errors.New("ledger: not a ledger directory")
	// ErrLocked: Open, Verify or Dump found the directory locked by a ledger
	// open in another process or in this one. Verify and Dump read closed
	// directories only.
	ErrLocked = errors.New("ledger: directory in use by an open ledger")
)

// InputError reports an operation refused at submit. It took no tx id and
// changed nothing.
type InputError struct {
	Index int   // position in the SubmitBatch slice; 0 for Submit
	Err   error // one of the input sentinels
}

func (e *InputError) Error() string { return fmt.Sprintf("op %d: %v", e.Index, e.Err) }

// Unwrap returns the sentinel.
func (e *InputError) Unwrap() error { return e.Err }

// CorruptError names stored data that failed verification: a file of the
// ledger directory (a WAL segment, a pebble file) and the offset in it, or
// a pebble record by key, and the transactions affected. Open returns it for
// any damage but a torn WAL tail, and writes nothing then.
type CorruptError struct {
	File    string // path relative to the ledger directory; "" for a pebble record
	Offset  int64  // in File
	Key     []byte // pebble key of the record, if the damage is one
	FirstTx TxID   // first transaction affected (0 if unknown)
	LastTx  TxID   // last transaction affected (0: unknown, or through the end of the log)
	Reason  string
}

func (e *CorruptError) Error() string {
	if e.File != "" {
		return fmt.Sprintf("ledger: corrupt %s at offset %d (tx %d..%d): %s", e.File, e.Offset, e.FirstTx, e.LastTx, e.Reason)
	}
	return fmt.Sprintf("ledger: corrupt record %x (tx %d..%d): %s", e.Key, e.FirstTx, e.LastTx, e.Reason)
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }
