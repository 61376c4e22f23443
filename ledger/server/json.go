package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
)

// jsonOp is an operation in the HTTP API:
//
//	{"type":"deposit","account":1,"amount":100,"user_ref":7}
//	{"type":"withdrawal","account":1,"amount":5}
//	{"type":"transfer","from":1,"to":2,"amount":5}
//	{"type":"composite","legs":[{"account":1,"delta":-5},{"account":2,"delta":5}],"no_negative":true}
type jsonOp struct {
	Type       string    `json:"type"`
	Account    uint64    `json:"account,omitempty"`
	From       uint64    `json:"from,omitempty"`
	To         uint64    `json:"to,omitempty"`
	Amount     uint64    `json:"amount,omitempty"`
	UserRef    uint64    `json:"user_ref,omitempty"`
	Legs       []jsonLeg `json:"legs,omitempty"`
	NoNegative bool      `json:"no_negative,omitempty"`
}

type jsonLeg struct {
	Account uint64 `json:"account"`
	Delta   int64  `json:"delta"`
}

func (o *jsonOp) op() (ledger.Op, error) {
	switch strings.ToLower(o.Type) {
	case "deposit":
		return ledger.Deposit{Account: o.Account, Amount: o.Amount, UserRef: o.UserRef}, nil
	case "withdrawal", "withdraw":
		return ledger.Withdrawal{Account: o.Account, Amount: o.Amount, UserRef: o.UserRef}, nil
	case "transfer":
		return ledger.Transfer{From: o.From, To: o.To, Amount: o.Amount, UserRef: o.UserRef}, nil
	case "composite":
		c := ledger.Composite{UserRef: o.UserRef, Legs: make([]ledger.Leg, len(o.Legs))}
		for i, l := range o.Legs {
			c.Legs[i] = ledger.Leg{Account: l.Account, Delta: l.Delta}
		}
		if o.NoNegative {
			c.Flags = ledger.NoNegative
		}
		return c, nil
	}
	return nil, fmt.Errorf("%w: unknown op type %q", wire.ErrMalformed, o.Type)
}

// decodeStrict decodes body, which must hold exactly one JSON value, into
// v. An unknown field is refused rather than dropped: a misspelt
// "user_ref" would otherwise lose the op's idempotency without a word.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", wire.ErrMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the JSON value", wire.ErrMalformed)
	}
	return nil
}

// parseOps decodes one op object or an array of them.
func parseOps(body []byte) (ops []ledger.Op, single bool, err error) {
	trimmed := strings.TrimLeft(string(body[:min(len(body), 64)]), " \t\r\n")
	var jops []jsonOp
	if strings.HasPrefix(trimmed, "[") {
		if err := decodeStrict(body, &jops); err != nil {
			return nil, false, err
		}
	} else {
		var o jsonOp
		if err := decodeStrict(body, &o); err != nil {
			return nil, false, err
		}
		jops, single = []jsonOp{o}, true
	}
	ops = make([]ledger.Op, len(jops))
	for i := range jops {
		if ops[i], err = jops[i].op(); err != nil {
			return nil, false, &ledger.InputError{Index: i, Err: err}
		}
	}
	return ops, single, nil
}

type jsonEntry struct {
	Account uint64 `json:"account"`
	Delta   int64  `json:"delta"`
	Balance int64  `json:"balance"`
}

type jsonResult struct {
	ID        ledger.TxID `json:"id"`
	Kind      string      `json:"kind"`
	Fail      string      `json:"fail"`
	UserRef   uint64      `json:"user_ref,omitempty"`
	DupOf     ledger.TxID `json:"dup_of,omitempty"`
	Timestamp int64       `json:"timestamp"`
	Entries   []jsonEntry `json:"entries"`
}

func toJSONResult(r *ledger.Result) *jsonResult {
	j := &jsonResult{ID: r.ID, Kind: r.Kind.String(), Fail: r.Fail.String(), UserRef: r.UserRef,
		DupOf: r.DupOf, Timestamp: r.Timestamp, Entries: make([]jsonEntry, len(r.Entries))}
	for i, e := range r.Entries {
		j.Entries[i] = jsonEntry(e)
	}
	return j
}

type jsonIndexes struct {
	Sequenced ledger.TxID `json:"sequenced"`
	Computed  ledger.TxID `json:"computed"`
	Committed ledger.TxID `json:"committed"`
	Snapshot  ledger.TxID `json:"snapshot"`
}

type jsonError struct {
	Error string `json:"error"`
	Code  uint16 `json:"code"`
	Index int    `json:"index,omitempty"`
}
