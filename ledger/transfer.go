package ledger

// TransferFlags make a Transfer two-phase, balancing or closing.
type TransferFlags uint16

// Transfer flags. At most one of Pending, PostPendingTransfer and
// VoidPendingTransfer; the closing flags need Pending; the balancing and
// closing flags cannot post or void.
const (
	// Pending holds Amount in the pending columns (debits_pending of From,
	// credits_pending of To) until a post or void names the transfer's
	// TxID, or its Timeout expires.
	Pending TransferFlags = 1 << iota
	// PostPendingTransfer moves the pending transfer PendingID's hold to
	// the posted columns: Amount of it (0: all of it), the rest released.
	PostPendingTransfer
	// VoidPendingTransfer releases the pending transfer PendingID's hold.
	VoidPendingTransfer
	// BalancingDebit transfers at most Amount: as much as the debit
	// account's DebitsMustNotExceedCredits limit allows (its credits
	// posted minus its debits, pending included).
	BalancingDebit
	// BalancingCredit transfers at most Amount: as much as the credit
	// account's CreditsMustNotExceedDebits limit allows.
	BalancingCredit
	// ClosingDebit closes the debit account (Closed) when the pending
	// transfer applies; voiding the transfer opens it again.
	ClosingDebit
	// ClosingCredit closes the credit account likewise.
	ClosingCredit
	transferFlagsMask = Pending | PostPendingTransfer | VoidPendingTransfer | BalancingDebit | BalancingCredit | ClosingDebit | ClosingCredit
	// resolving are the flags of a post or void.
	resolving = PostPendingTransfer | VoidPendingTransfer
)

var transferFlagNames = [...]string{"pending", "post_pending_transfer", "void_pending_transfer",
	"balancing_debit", "balancing_credit", "closing_debit", "closing_credit"}

// Names returns the snake_case names of the flags set in f, in bit order.
func (f TransferFlags) Names() []string {
	names := []string{}
	for i, n := range transferFlagNames {
		if f&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return names
}

// TransferFlagByName returns the flag whose snake_case name is s.
func TransferFlagByName(s string) (TransferFlags, bool) {
	for i, n := range transferFlagNames {
		if n == s {
			return 1 << i, true
		}
	}
	return 0, false
}

// valid reports whether f is a combination a transfer may have.
func (f TransferFlags) valid() bool {
	phases := f & (Pending | resolving)
	switch {
	case f&^transferFlagsMask != 0,
		phases&(phases-1) != 0, // more than one of pending, post, void
		f&(ClosingDebit|ClosingCredit) != 0 && f&Pending == 0,
		f&resolving != 0 && f&(BalancingDebit|BalancingCredit) != 0:
		return false
	}
	return true
}

// prepareTransfer validates a Transfer against the rules that need no
// state and fills r.
func prepareTransfer(o *Transfer, r *request) error {
	*r = request{kind: KindTransfer, a: o.From, b: o.To, amount: o.Amount, userRef: o.UserRef, linked: o.Linked,
		meta: uint64(o.Ledger) | uint64(o.Code)<<32 | uint64(o.Flags)<<48, userData: o.UserData}
	f := o.Flags
	if !f.valid() {
		return ErrTransferFlags
	}
	switch {
	case f&resolving != 0:
		if o.PendingID == 0 {
			return ErrPendingID
		}
		r.aux = uint64(o.PendingID)
		// Amount 0 takes the pending transfer's; From and To 0 (the
		// system account's id) take the pending transfer's accounts.
		if o.Amount > maxColumn {
			return ErrAmountRange
		}
	case o.PendingID != 0:
		return ErrPendingID
	case f&(ClosingDebit|ClosingCredit) != 0:
		if o.Amount > maxColumn { // a closing transfer may hold nothing
			return ErrAmountRange
		}
	default:
		if err := checkAmount(o.Amount); err != nil {
			return err
		}
	}
	if o.Timeout != 0 {
		if f&Pending == 0 {
			return ErrTimeout
		}
		r.aux = uint64(o.Timeout)
	}
	if o.From == o.To && (f&resolving == 0 || o.From != 0) {
		return ErrSameAccount
	}
	return nil
}

// The fields a Transfer request packs in meta.
func (r *request) ledger() uint32        { return uint32(r.meta) }
func (r *request) code() uint16          { return uint16(r.meta >> 32) }
func (r *request) tflags() TransferFlags { return TransferFlags(r.meta >> 48) }
func (r *request) pendingID() uint64     { return r.aux }
func (r *request) timeout() uint32       { return uint32(r.aux) }
