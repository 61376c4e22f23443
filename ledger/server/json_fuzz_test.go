package server

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
)

// FuzzParseOps: any body either decodes into ops or is refused with a
// malformed or input error; it never panics. A decoded body re-encodes as
// JSON that the server's own decoder accepts again with the same ops, so
// nothing it accepted was silently dropped.
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
			var ie *ledger.InputError
			if !errors.Is(err, wire.ErrMalformed) && !errors.As(err, &ie) {
				t.Fatalf("error of no known kind: %v", err)
			}
			return
		}
		if single && len(ops) != 1 {
			t.Fatalf("single body gave %d ops", len(ops))
		}
		again, err := json.Marshal(toJSONOps(ops))
		if err != nil {
			t.Fatal(err)
		}
		ops2, _, err := parseOps(again)
		if err != nil {
			t.Fatalf("re-encoded %s refused: %v", again, err)
		}
		if len(ops2) != len(ops) {
			t.Fatalf("%d ops became %d", len(ops), len(ops2))
		}
		for i := range ops {
			a, _ := json.Marshal(toJSONOps(ops[i : i+1]))
			b, _ := json.Marshal(toJSONOps(ops2[i : i+1]))
			if string(a) != string(b) {
				t.Fatalf("op %d: %s became %s", i, a, b)
			}
		}
	})
}

// toJSONOps is the inverse of jsonOp.op, for the fuzz target.
func toJSONOps(ops []ledger.Op) []jsonOp {
	out := make([]jsonOp, len(ops))
	for i, op := range ops {
		switch o := op.(type) {
		case ledger.Deposit:
			out[i] = jsonOp{Type: "deposit", Account: o.Account, Amount: o.Amount, UserRef: o.UserRef}
		case ledger.Withdrawal:
			out[i] = jsonOp{Type: "withdrawal", Account: o.Account, Amount: o.Amount, UserRef: o.UserRef}
		case ledger.Transfer:
			out[i] = jsonOp{Type: "transfer", From: o.From, To: o.To, Amount: o.Amount, UserRef: o.UserRef}
		case ledger.Composite:
			j := jsonOp{Type: "composite", UserRef: o.UserRef, NoNegative: o.Flags&ledger.NoNegative != 0}
			for _, l := range o.Legs {
				j.Legs = append(j.Legs, jsonLeg{Account: l.Account, Delta: l.Delta})
			}
			out[i] = j
		default:
			panic("unknown op")
		}
	}
	return out
}
