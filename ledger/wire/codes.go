package wire

import (
	"errors"
	"fmt"

	"github.com/lanework/lanework/ledger"
)

// Code is the error code of a TypeError body.
type Code uint16

// Protocol error codes (1-15).
const (
	CodeMalformed    Code = 1 // the body does not decode as the type requires
	CodeUnknownType  Code = 2 // the message type is not a known request
	CodeTooLarge     Code = 3 // the frame is above the server's limit; the server closes the connection
	CodeShutdown     Code = 4 // the server is shutting down
	CodeBusy         Code = 5 // the server holds its maximum of connections; it closes this one
	CodeUnauthorized Code = 6 // no valid token: the first frame was not a hello with a known token; the server closes the connection
	CodeForbidden    Code = 7 // the connection's token is read_only and the request writes
	CodeInternal     Code = 15
)

// Ledger error codes (16 and up), one per ledger sentinel.
const (
	CodeClosed      Code = 16
	CodeFailed      Code = 17
	CodeNilOp       Code = 18
	CodeZeroAmount  Code = 19
	CodeAmountRange Code = 20
	CodeSameAccount Code = 22 // 21 was account_range, before accounts were created
	CodeNoLegs      Code = 23
	CodeTooManyLegs Code = 24
	CodeFlags       Code = 25
	CodeBatchSize   Code = 26
	CodeLevel       Code = 27
	CodeNotFound    Code = 29 // 28 is reserved
	// Created accounts: input codes of CreateAccount, and a Lookup or
	// Balance of an account that does not exist.
	CodeAccountID       Code = 30
	CodeLedgerZero      Code = 31
	CodeAccountFlags    Code = 32
	CodeAccountNotFound Code = 33
	// Transfer fields: input codes of a Transfer's flags, pending_id and
	// timeout.
	CodeTransferFlags Code = 34
	CodePendingID     Code = 35
	CodeTimeout       Code = 36
	// Reads of the history and query indexes.
	CodeFilter       Code = 40 // a filter refused (ledger.FilterError): the message names the field
	CodeNoHistory    Code = 41 // the account keeps no history (no history flag)
	CodeIndexOff     Code = 42 // the ledger keeps no index (or is a follower)
	CodeNotCommitted Code = 43 // a read as of a transaction not yet committed
	// CodeNotLeader: the server serves a cluster replica that does not
	// lead. The error's Message is the leader's address on this protocol,
	// "" if unknown; a client asks it (ledger/client WithCluster does).
	CodeNotLeader Code = 37
)

// Sentinels for the protocol codes, matched with errors.Is on an *Error.
var (
	ErrMalformed    = errors.New("wire: malformed message")
	ErrUnknownType  = errors.New("wire: unknown message type")
	ErrShutdown     = errors.New("wire: server shutting down")
	ErrBusy         = errors.New("wire: server busy")
	ErrUnauthorized = errors.New("wire: unauthorized")
	ErrForbidden    = errors.New("wire: forbidden for a read_only token")
	ErrInternal     = errors.New("wire: internal server error")
)

var codeErrs = map[Code]error{
	CodeMalformed:       ErrMalformed,
	CodeUnknownType:     ErrUnknownType,
	CodeTooLarge:        ErrFrameTooLarge,
	CodeShutdown:        ErrShutdown,
	CodeBusy:            ErrBusy,
	CodeUnauthorized:    ErrUnauthorized,
	CodeForbidden:       ErrForbidden,
	CodeInternal:        ErrInternal,
	CodeClosed:          ledger.ErrClosed,
	CodeFailed:          ledger.ErrFailed,
	CodeNilOp:           ledger.ErrNilOp,
	CodeZeroAmount:      ledger.ErrZeroAmount,
	CodeAmountRange:     ledger.ErrAmountRange,
	CodeSameAccount:     ledger.ErrSameAccount,
	CodeNoLegs:          ledger.ErrNoLegs,
	CodeTooManyLegs:     ledger.ErrTooManyLegs,
	CodeFlags:           ledger.ErrFlags,
	CodeBatchSize:       ledger.ErrBatchSize,
	CodeLevel:           ledger.ErrLevel,
	CodeNotFound:        ledger.ErrNotFound,
	CodeAccountID:       ledger.ErrAccountID,
	CodeLedgerZero:      ledger.ErrLedgerZero,
	CodeAccountFlags:    ledger.ErrAccountFlags,
	CodeAccountNotFound: ledger.ErrAccountNotFound,
	CodeTransferFlags:   ledger.ErrTransferFlags,
	CodePendingID:       ledger.ErrPendingID,
	CodeTimeout:         ledger.ErrTimeout,
	CodeFilter:          ledger.ErrFilter,
	CodeNoHistory:       ledger.ErrNoHistory,
	CodeIndexOff:        ledger.ErrIndexOff,
	CodeNotCommitted:    ledger.ErrNotCommitted,
	CodeNotLeader:       ledger.ErrNotLeader,
}

// order matters: ErrFailed wraps storage errors, so it is tested before the
// generic fallback; input sentinels are distinct.
var errCodes = []struct {
	err  error
	code Code
}{
	{ErrMalformed, CodeMalformed}, {ErrUnknownType, CodeUnknownType},
	{ErrFrameTooLarge, CodeTooLarge}, {ErrShutdown, CodeShutdown}, {ErrBusy, CodeBusy},
	{ErrUnauthorized, CodeUnauthorized}, {ErrForbidden, CodeForbidden},
	{ledger.ErrClosed, CodeClosed}, {ledger.ErrFailed, CodeFailed},
	{ledger.ErrNilOp, CodeNilOp}, {ledger.ErrZeroAmount, CodeZeroAmount},
	{ledger.ErrAmountRange, CodeAmountRange}, {ledger.ErrAccountID, CodeAccountID},
	{ledger.ErrLedgerZero, CodeLedgerZero}, {ledger.ErrAccountFlags, CodeAccountFlags},
	{ledger.ErrAccountNotFound, CodeAccountNotFound},
	{ledger.ErrSameAccount, CodeSameAccount}, {ledger.ErrNoLegs, CodeNoLegs},
	{ledger.ErrTooManyLegs, CodeTooManyLegs}, {ledger.ErrFlags, CodeFlags},
	{ledger.ErrBatchSize, CodeBatchSize}, {ledger.ErrLevel, CodeLevel},
	{ledger.ErrNotFound, CodeNotFound},
	{ledger.ErrTransferFlags, CodeTransferFlags}, {ledger.ErrPendingID, CodePendingID}, {ledger.ErrTimeout, CodeTimeout},
	{ledger.ErrFilter, CodeFilter}, {ledger.ErrNoHistory, CodeNoHistory},
	{ledger.ErrIndexOff, CodeIndexOff}, {ledger.ErrNotCommitted, CodeNotCommitted},
	{ledger.ErrNotLeader, CodeNotLeader},
}

var codeNames = map[Code]string{
	CodeMalformed: "malformed", CodeUnknownType: "unknown_type", CodeTooLarge: "too_large",
	CodeShutdown: "shutdown", CodeBusy: "busy", CodeUnauthorized: "unauthorized", CodeForbidden: "forbidden",
	CodeInternal: "internal", CodeClosed: "closed", CodeFailed: "failed", CodeNilOp: "nil_op",
	CodeZeroAmount: "zero_amount", CodeAmountRange: "amount_range", CodeAccountID: "account_id",
	CodeLedgerZero: "ledger_zero", CodeAccountFlags: "account_flags", CodeAccountNotFound: "account_not_found",
	CodeSameAccount: "same_account", CodeNoLegs: "no_legs", CodeTooManyLegs: "too_many_legs",
	CodeFlags: "flags", CodeBatchSize: "batch_size", CodeLevel: "level", CodeNotFound: "not_found",
	CodeTransferFlags: "transfer_flags", CodePendingID: "pending_id", CodeTimeout: "timeout",
	CodeFilter: "bad_filter", CodeNoHistory: "no_history", CodeIndexOff: "index_off", CodeNotCommitted: "not_committed",
	CodeNotLeader: "not_leader",
}

// String returns the code's snake_case name (as metric labels spell it),
// or "code_N" for a code this version does not know.
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("code_%d", uint16(c))
}

// IsInput reports whether c is one of the codes of a ledger.InputError.
func (c Code) IsInput() bool {
	return c >= CodeNilOp && c <= CodeBatchSize || c >= CodeAccountID && c <= CodeAccountFlags ||
		c >= CodeTransferFlags && c <= CodeTimeout
}

// Error is a TypeError body: a failure the server reports for one request.
// It unwraps to the matching sentinel (a ledger sentinel such as
// ledger.ErrAccountNotFound or a wire sentinel such as ErrMalformed), so
// errors.Is works across the network.
type Error struct {
	Code    Code
	Index   int    // for input errors, the position of the op in a submit batch
	Message string // human-readable; not part of the contract
}

// Error returns the server's message, prefixed with the code.
func (e *Error) Error() string { return fmt.Sprintf("server error %d: %s", e.Code, e.Message) }

// Unwrap returns the sentinel of e's code, or nil for an unknown code.
func (e *Error) Unwrap() error { return codeErrs[e.Code] }

// AsError converts err, returned by the ledger or the server, into an
// *Error. Input errors keep their index. Unknown errors become
// CodeInternal.
func AsError(err error) *Error {
	var we *Error
	if errors.As(err, &we) {
		return we
	}
	e := &Error{Code: CodeInternal}
	msg := err.Error()
	var ie *ledger.InputError
	if errors.As(err, &ie) {
		// The index travels in Index, and Err puts it back in front of
		// the message: keep it out of the message itself.
		e.Index = ie.Index
		msg = ie.Err.Error()
	}
	e.Message = truncate(msg)
	for _, c := range errCodes {
		if errors.Is(err, c.err) {
			e.Code = c.code
			break
		}
	}
	return e
}

// Err converts e back into the error a local ledger call would have
// returned where possible: an input code becomes a *ledger.InputError
// wrapping e (so errors.Is finds the sentinel, errors.As the InputError);
// every other code returns e itself.
func (e *Error) Err() error {
	if e.Code.IsInput() {
		return &ledger.InputError{Index: e.Index, Err: e}
	}
	return e
}

func truncate(s string) string {
	if len(s) > MaxMessage {
		return s[:MaxMessage]
	}
	return s
}
