package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
)

// FuzzParseOps: any body either decodes into ops or is refused with a
// malformed error; it never panics. A decoded body re-encodes as JSON that
// the server's own decoder accepts again with the same ops, so nothing it
// accepted was silently dropped, cast or defaulted.
func FuzzParseOps(f *testing.F) {
	for _, s := range []string{
		`{"type":"deposit","account":1,"amount":100,"user_ref":7}`,
		`[{"type":"withdrawal","account":1,"amount":5},{"type":"transfer","from":1,"to":2,"amount":5}]`,
		`{"type":"composite","legs":[{"account":1,"delta":-5},{"account":2,"delta":5}],"no_negative":true}`,
		`{"type":"deposit","account":1,"amount":1,"userref":9}`,
		`{"type":"deposit"} {}`, `[]`, `  [ `, `null`, `{"type":"mint"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ops, single, err := parseOps(body)
		if err != nil {
			if !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("error of no known kind: %v", err)
			}
			return
		}
		if single && len(ops) != 1 {
			t.Fatalf("single body gave %d ops", len(ops))
		}
		again := jsonOps(ops, single)
		ops2, single2, err := parseOps(again)
		if err != nil {
			t.Fatalf("re-encoded %s refused: %v", again, err)
		}
		if single2 != single || !reflect.DeepEqual(ops, ops2) {
			t.Fatalf("%s: %v became %s: %v", body, ops, again, ops2)
		}
	})
}

// jsonOps is the inverse of parseOps, for the fuzz target: one object if
// single, else an array.
func jsonOps(ops []ledger.Op, single bool) []byte {
	out := make([]map[string]any, len(ops))
	for i, op := range ops {
		switch o := op.(type) {
		case ledger.Deposit:
			out[i] = map[string]any{"type": "deposit", "account": o.Account, "amount": o.Amount, "user_ref": o.UserRef}
		case ledger.Withdrawal:
			out[i] = map[string]any{"type": "withdrawal", "account": o.Account, "amount": o.Amount, "user_ref": o.UserRef}
		case ledger.Transfer:
			out[i] = map[string]any{"type": "transfer", "from": o.From, "to": o.To, "amount": o.Amount, "user_ref": o.UserRef,
				"ledger": o.Ledger, "code": o.Code, "user_data": o.UserData, "flags": o.Flags.Names(), "pending_id": o.PendingID,
				"timeout": o.Timeout, "linked": o.Linked}
		case ledger.Composite:
			legs := make([]map[string]any, len(o.Legs))
			for j, l := range o.Legs {
				legs[j] = map[string]any{"account": l.Account, "delta": l.Delta}
			}
			out[i] = map[string]any{"type": "composite", "legs": legs, "user_ref": o.UserRef, "no_negative": o.Flags&ledger.NoNegative != 0}
		default:
			panic(fmt.Sprintf("unknown op %T", op))
		}
	}
	var v any = out
	if single {
		v = out[0]
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
