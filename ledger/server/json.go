package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
)

// An operation in the HTTP API is one JSON object:
//
//	{"type":"deposit","account":1,"amount":100,"user_ref":7}
//	{"type":"withdrawal","account":1,"amount":5}
//	{"type":"transfer","from":1,"to":2,"amount":5}
//	{"type":"transfer","from":1,"to":2,"amount":5,"ledger":840,"code":1,"user_data":9,"flags":["pending"],"timeout":60}
//	{"type":"transfer","flags":["post_pending_transfer"],"pending_id":12,"amount":3}
//	{"type":"composite","legs":[{"account":1,"delta":-5},{"account":2,"delta":5}],"no_negative":true}
//	{"type":"create_account","id":1,"ledger":1,"code":7,"flags":["debits_must_not_exceed_credits"],"user_data_0":5,"user_data_1":0}
//
// decoded under the op rule of the wire package (wire/oprule.go), the one
// the binary protocol follows: exactly the fields of its type, each once,
// each of its JSON type (null refused); user_ref and no_negative may be
// left out, and so may create_account's code, flags and user data (flags
// are the snake_case names of ledger.AccountFlags), and every op's "linked"
// (true: linked to the next op of its batch, see ledger.MaxChain). A
// transfer's fields after amount may be left out (0), its flags are the
// names of ledger.TransferFlags, and a post or void may leave out from, to
// and amount (the pending transfer's).

// jsonFields lists each type's fields and whether they are required.
var jsonFields = [...][]struct {
	name     string
	required bool
}{
	ledger.KindDeposit:    {{"account", true}, {"amount", true}, {"user_ref", false}, {"linked", false}},
	ledger.KindWithdrawal: {{"account", true}, {"amount", true}, {"user_ref", false}, {"linked", false}},
	ledger.KindTransfer: {{"from", true}, {"to", true}, {"amount", true}, {"user_ref", false}, {"ledger", false},
		{"code", false}, {"user_data", false}, {"flags", false}, {"pending_id", false}, {"timeout", false}, {"linked", false}},
	ledger.KindComposite: {{"legs", true}, {"no_negative", false}, {"user_ref", false}, {"linked", false}},
	ledger.KindCreateAccount: {{"id", true}, {"ledger", true}, {"code", false}, {"flags", false},
		{"user_data_0", false}, {"user_data_1", false}, {"user_ref", false}, {"linked", false}},
}

// member is one key and raw value of an object.
type member struct {
	key string
	val json.RawMessage
}

// readObject reads one JSON object from dec into members, refusing a
// repeated key. what names the object in errors.
func readObject(dec *json.Decoder, what string) ([]member, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", wire.ErrMalformed, what, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%w: %s: %s, want an object", wire.ErrMalformed, what, jsonKind(tok))
	}
	var ms []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", wire.ErrMalformed, what, err)
		}
		key := tok.(string) // inside an object the decoder yields only string keys
		for _, m := range ms {
			if m.key == key {
				return nil, fmt.Errorf("%w: %s.%s: repeated key", wire.ErrMalformed, what, key)
			}
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: %s.%s: %v", wire.ErrMalformed, what, key, err)
		}
		ms = append(ms, member{key, raw})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, fmt.Errorf("%w: %s: %v", wire.ErrMalformed, what, err)
	}
	return ms, nil
}

func jsonKind(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	}
	return "a value"
}

// rawKind names the JSON type of a raw value.
func rawKind(raw json.RawMessage) string {
	switch raw[0] {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return "a number"
}

// jsonUint parses an unsigned integer literal: digits only, no sign,
// fraction or exponent. "" means ok, else the problem.
func jsonUint(raw json.RawMessage) (uint64, string) {
	if raw[0] < '0' || raw[0] > '9' {
		if raw[0] == '-' {
			return 0, "negative, want an unsigned integer"
		}
		return 0, "want an unsigned integer, got " + rawKind(raw)
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Sprintf("%s out of the uint64 range", raw)
		}
		return 0, fmt.Sprintf("%s is not an integer", raw)
	}
	return v, ""
}

// jsonInt parses a signed integer literal.
func jsonInt(raw json.RawMessage) (int64, string) {
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, "want an integer, got " + rawKind(raw)
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Sprintf("%s out of the int64 range", raw)
		}
		return 0, fmt.Sprintf("%s is not an integer", raw)
	}
	return v, ""
}

// parseOp decodes op idx (-1: a single op) from dec.
func parseOp(dec *json.Decoder, idx int) (ledger.Op, error) {
	ms, err := readObject(dec, wire.OpPath(idx))
	if err != nil {
		return nil, err
	}
	var kind ledger.Kind
	for _, m := range ms {
		if m.key != "type" {
			continue
		}
		var name string
		if m.val[0] != '"' || json.Unmarshal(m.val, &name) != nil {
			return nil, wire.FieldError(idx, 0, "type", "want a string, got %s", rawKind(m.val))
		}
		k, ok := wire.KindByName(name)
		if !ok {
			return nil, wire.FieldError(idx, 0, "type", "unknown op type %q (create_account, deposit, withdrawal, transfer or composite)", name)
		}
		kind = k
	}
	if kind == 0 {
		return nil, wire.FieldError(idx, 0, "type", "missing")
	}
	fields := jsonFields[kind]
	var u [11]uint64 // by position in fields
	var legs []ledger.Leg
	var noNeg, linked bool
	var aflags ledger.AccountFlags
	var tflags ledger.TransferFlags
	seen := 0
	for _, m := range ms {
		if m.key == "type" {
			continue
		}
		pos := -1
		for i, f := range fields {
			if f.name == m.key {
				pos = i
			}
		}
		if pos < 0 {
			return nil, wire.FieldError(idx, kind, m.key, "not a field of %s", kind)
		}
		seen |= 1 << pos
		var p string
		switch m.key {
		case "legs":
			legs, err = parseLegs(m.val, idx)
			if err != nil {
				return nil, err
			}
		case "flags":
			if kind == ledger.KindTransfer {
				tflags, p = parseTransferFlags(m.val)
			} else {
				aflags, p = parseAccountFlags(m.val)
			}
		case "no_negative", "linked":
			v := &noNeg
			if m.key == "linked" {
				v = &linked
			}
			switch string(m.val) {
			case "true":
				*v = true
			case "false":
			default:
				p = "want a boolean, got " + rawKind(m.val)
			}
		default:
			u[pos], p = jsonUint(m.val)
		}
		if p != "" {
			return nil, wire.FieldError(idx, kind, m.key, "%s", p)
		}
	}
	for i, f := range fields {
		// A post or void may leave out from, to and amount.
		if f.required && seen&(1<<i) == 0 && !(kind == ledger.KindTransfer && tflags&(ledger.PostPendingTransfer|ledger.VoidPendingTransfer) != 0) {
			return nil, wire.FieldError(idx, kind, f.name, "missing")
		}
	}
	var op ledger.Op
	switch kind {
	case ledger.KindCreateAccount:
		for i, max := range [...]uint64{1: math.MaxUint32, 2: math.MaxUint16} {
			if max != 0 && u[i] > max {
				return nil, wire.FieldError(idx, kind, fields[i].name, "%d out of range", u[i])
			}
		}
		op = ledger.CreateAccount{ID: u[0], Ledger: uint32(u[1]), Code: uint16(u[2]), Flags: aflags, UserData: [2]uint64{u[4], u[5]}, UserRef: u[6], Linked: linked}
	case ledger.KindDeposit:
		op = ledger.Deposit{Account: u[0], Amount: u[1], UserRef: u[2], Linked: linked}
	case ledger.KindWithdrawal:
		op = ledger.Withdrawal{Account: u[0], Amount: u[1], UserRef: u[2], Linked: linked}
	case ledger.KindTransfer:
		for i, max := range [...]uint64{4: math.MaxUint32, 5: math.MaxUint16, 9: math.MaxUint32} {
			if max != 0 && u[i] > max {
				return nil, wire.FieldError(idx, kind, fields[i].name, "%d out of range", u[i])
			}
		}
		op = ledger.Transfer{From: u[0], To: u[1], Amount: u[2], UserRef: u[3], Ledger: uint32(u[4]), Code: uint16(u[5]),
			UserData: u[6], Flags: tflags, PendingID: ledger.TxID(u[8]), Timeout: uint32(u[9]), Linked: linked}
	default:
		c := ledger.Composite{Legs: legs, UserRef: u[2], Linked: linked}
		if noNeg {
			c.Flags = ledger.NoNegative
		}
		op = c
	}
	return op, wire.CheckSystemAccount(idx, op)
}

// parseAccountFlags decodes an array of account flag names.
func parseAccountFlags(raw json.RawMessage) (ledger.AccountFlags, string) {
	f, p := parseFlags(raw, func(s string) (uint16, bool) {
		f, ok := ledger.AccountFlagByName(s)
		return uint16(f), ok
	})
	return ledger.AccountFlags(f), p
}

// parseTransferFlags decodes an array of transfer flag names.
func parseTransferFlags(raw json.RawMessage) (ledger.TransferFlags, string) {
	f, p := parseFlags(raw, func(s string) (uint16, bool) {
		f, ok := ledger.TransferFlagByName(s)
		return uint16(f), ok
	})
	return ledger.TransferFlags(f), p
}

// parseFlags decodes an array of flag names, each once.
func parseFlags(raw json.RawMessage, byName func(string) (uint16, bool)) (uint16, string) {
	if raw[0] != '[' {
		return 0, "want an array of flag names, got " + rawKind(raw)
	}
	var names []json.RawMessage
	if err := json.Unmarshal(raw, &names); err != nil {
		return 0, err.Error()
	}
	var f uint16
	for _, n := range names {
		var name string
		if len(n) == 0 || n[0] != '"' || json.Unmarshal(n, &name) != nil {
			return 0, "want a flag name, got " + rawKind(n)
		}
		b, ok := byName(name)
		if !ok {
			return 0, fmt.Sprintf("unknown flag %q", name)
		}
		if f&b != 0 {
			return 0, fmt.Sprintf("flag %q repeated", name)
		}
		f |= b
	}
	return f, ""
}

// parseLegs decodes a composite's legs: an array of {"account","delta"}.
func parseLegs(raw json.RawMessage, idx int) ([]ledger.Leg, error) {
	const kind = ledger.KindComposite
	if raw[0] != '[' {
		return nil, wire.FieldError(idx, kind, "legs", "want an array, got %s", rawKind(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	_, _ = dec.Token() // '['
	legs := []ledger.Leg{}
	for i := 0; dec.More(); i++ {
		name := fmt.Sprintf("legs[%d]", i)
		ms, err := readObject(dec, wire.OpPath(idx)+"."+name)
		if err != nil {
			return nil, err
		}
		var l ledger.Leg
		seen := 0
		for _, m := range ms {
			var p string
			switch m.key {
			case "account":
				l.Account, p = jsonUint(m.val)
				seen |= 1
			case "delta":
				l.Delta, p = jsonInt(m.val)
				seen |= 2
			default:
				p = "not a field of a leg (account, delta)"
			}
			if p != "" {
				return nil, wire.FieldError(idx, kind, name+"."+m.key, "%s", p)
			}
		}
		if seen&1 == 0 {
			return nil, wire.FieldError(idx, kind, name+".account", "missing")
		}
		if seen&2 == 0 {
			return nil, wire.FieldError(idx, kind, name+".delta", "missing")
		}
		legs = append(legs, l)
	}
	return legs, nil
}

// parseOps decodes one op object or an array of them; nothing may follow.
func parseOps(body []byte) (ops []ledger.Op, single bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	trimmed := bytes.TrimLeft(body[:min(len(body), 64)], " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		_, _ = dec.Token()
		for i := 0; dec.More(); i++ {
			op, err := parseOp(dec, i)
			if err != nil {
				return nil, false, &ledger.InputError{Index: i, Err: err}
			}
			ops = append(ops, op)
		}
		if _, err := dec.Token(); err != nil { // ']'
			return nil, false, fmt.Errorf("%w: ops: %v", wire.ErrMalformed, err)
		}
	} else {
		op, err := parseOp(dec, -1)
		if err != nil {
			return nil, false, err
		}
		ops, single = []ledger.Op{op}, true
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false, fmt.Errorf("%w: data after the JSON value", wire.ErrMalformed)
	}
	return ops, single, nil
}
