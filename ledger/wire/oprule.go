package wire

import (
	"fmt"

	"github.com/lanework/lanework/ledger"
)

// The op rule, applied alike by the msgpack Decoder and the server's JSON
// decoder, so that both protocols accept exactly the same ops:
//
//  1. An op names its type (msgpack: the kind in field 0; JSON: "type",
//     one of the snake_case names of ledger.Kind) and carries exactly the
//     fields of that type, each once. A missing field, a field of another
//     type, a repeated key or an extra array element is refused.
//  2. Every value has the type of its field: an unsigned integer for ids,
//     amounts, user_ref and flags, a signed integer for a leg's delta, a
//     boolean for no_negative. nil (JSON null), strings, floats and values
//     outside the field's range are refused, never cast or defaulted.
//  3. The system account (ledger.SystemAccount) is reachable only through
//     deposit and withdrawal: a transfer or composite leg naming it is
//     refused (a post or void's from and to 0 mean "the pending
//     transfer's").
//
// A refusal wraps ErrMalformed (wire code 1) and names the field: "op.to"
// for the op of a submit_wait or a single HTTP op, "ops[3].legs[1].delta"
// inside a batch. Rules that depend on the ledger (account range, zero
// amounts, leg count) stay with the ledger and keep their own codes.

// KindByName returns the kind whose snake_case name (ledger.Kind.String)
// is s; false for any other spelling.
func KindByName(s string) (ledger.Kind, bool) {
	for k := ledger.KindDeposit; k <= ledger.KindCreateAccount; k++ {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

// OpPath names op idx of a request in errors: "op" for a single op
// (idx < 0), "ops[idx]" inside a batch.
func OpPath(idx int) string {
	if idx < 0 {
		return "op"
	}
	return fmt.Sprintf("ops[%d]", idx)
}

// FieldError is the malformed-input error naming field of op idx (see
// OpPath) of kind k (0 if not known yet).
func FieldError(idx int, k ledger.Kind, field, format string, args ...any) error {
	what := ""
	if k != 0 {
		what = " (" + k.String() + ")"
	}
	return fmt.Errorf("%w: %s.%s%s: %s", ErrMalformed, OpPath(idx), field, what, fmt.Sprintf(format, args...))
}

// CheckSystemAccount applies rule 3 to a decoded op: it returns the
// malformed error naming the first field that puts the system account in a
// transfer or composite, or nil.
func CheckSystemAccount(idx int, op ledger.Op) error {
	const msg = "the system account is reachable only through deposit and withdrawal"
	switch o := op.(type) {
	case ledger.Transfer:
		return checkTransfer(idx, &o)
	case *ledger.Transfer:
		return checkTransfer(idx, o)
	case ledger.Composite:
		for i, l := range o.Legs {
			if l.Account == ledger.SystemAccount {
				return FieldError(idx, ledger.KindComposite, fmt.Sprintf("legs[%d].account", i), msg)
			}
		}
	}
	return nil
}

func checkTransfer(idx int, o *ledger.Transfer) error {
	const msg = "the system account is reachable only through deposit and withdrawal"
	if o.Flags&(ledger.PostPendingTransfer|ledger.VoidPendingTransfer) != 0 {
		return nil // from and to 0 take the pending transfer's accounts
	}
	switch ledger.SystemAccount {
	case o.From:
		return FieldError(idx, ledger.KindTransfer, "from", msg)
	case o.To:
		return FieldError(idx, ledger.KindTransfer, "to", msg)
	}
	return nil
}
