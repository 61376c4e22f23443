package server

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// fundStrict deposits into accounts 11..14 and returns the balances of
// 0 and 11..14 and the indexes, for the strict tests to compare against.
func fundStrict(t *testing.T, f *fixture) (map[uint64]int64, ledger.Indexes) {
	t.Helper()
	c := f.dial(t)
	ctx := context.Background()
	for a := uint64(11); a <= 14; a++ {
		_, err := c.SubmitAndWait(ctx, ledger.Deposit{Account: a, Amount: 100}, ledger.Snapshot)
		require.NoError(t, err)
	}
	return strictState(t, f)
}

func strictState(t *testing.T, f *fixture) (map[uint64]int64, ledger.Indexes) {
	t.Helper()
	bal := map[uint64]int64{}
	for _, a := range []uint64{0, 11, 12, 13, 14} {
		b, err := f.l.Balance(a)
		require.NoError(t, err)
		bal[a] = b
	}
	x, err := f.l.Indexes()
	require.NoError(t, err)
	return bal, x
}

// TestStrictJSON: every malformed op of the HTTP API is refused with code
// 1 naming its field, and nothing reaches the ledger.
func TestStrictJSON(t *testing.T) {
	f := startServer(t, Config{})
	bal, x := fundStrict(t, f)
	u := f.httpURL() + "/v1/ops"
	cases := []struct{ body, field string }{
		{`{"type":"transfer","from":11,"amount":40}`, "op.to"},
		{`{"type":"transfer","from":11,"account":12,"amount":10}`, "op.account"},
		{`{"type":"transfer","from":11,"to":12,"to":13,"amount":10}`, "op.to"},
		{`{"type":"deposit","account":13,"account":14,"amount":1}`, "op.account"},
		{`{"type":"deposit","account":13,"amount":1,"from":1}`, "op.from"},
		{`{"type":"deposit","account":13,"amount":1,"to":1}`, "op.to"},
		{`{"type":"deposit","account":13,"amount":1,"legs":[]}`, "op.legs"},
		{`{"type":"deposit","account":13,"amount":1,"no_negative":true}`, "op.no_negative"},
		{`{"type":"deposit","amount":1}`, "op.account"},
		{`{"type":"deposit","account":13}`, "op.amount"},
		{`{"type":"deposit","account":null,"amount":1}`, "op.account"},
		{`{"type":"deposit","account":13,"amount":null}`, "op.amount"},
		{`{"type":"deposit","account":13,"amount":"5"}`, "op.amount"},
		{`{"type":"deposit","account":13,"amount":1.5}`, "op.amount"},
		{`{"type":"deposit","account":13,"amount":1e2}`, "op.amount"},
		{`{"type":"deposit","account":13,"amount":-1}`, "op.amount"},
		{`{"type":"deposit","account":13,"amount":18446744073709551616}`, "op.amount"},
		{`{"type":"deposit","account":13,"amount":1,"user_ref":null}`, "op.user_ref"},
		{`{"type":"withdrawal","account":13,"amount":1,"user_ref":-2}`, "op.user_ref"},
		{`{"account":13,"amount":1}`, "op.type"},
		{`{"type":"Deposit","account":13,"amount":1}`, "op.type"},
		{`{"type":"withdraw","account":13,"amount":1}`, "op.type"},
		{`{"type":null,"account":13,"amount":1}`, "op.type"},
		{`{"type":"deposit","type":"deposit","account":13,"amount":1}`, "op.type"},
		{`{"type":"transfer","from":0,"to":12,"amount":10}`, "op.from"},
		{`{"type":"transfer","from":11,"to":0,"amount":10}`, "op.to"},
		{`{"type":"composite","legs":[{"account":0,"delta":-5},{"account":12,"delta":5}]}`, "op.legs[0].account"},
		{`{"type":"composite","legs":[{"account":11,"delta":-5},{"account":12}]}`, "op.legs[1].delta"},
		{`{"type":"composite","legs":[{"account":11,"delta":-5},{"delta":5}]}`, "op.legs[1].account"},
		{`{"type":"composite","legs":[{"account":11,"delta":-5,"delta":-5},{"account":12,"delta":5}]}`, "op.legs[0].delta"},
		{`{"type":"composite","legs":[{"account":11,"delta":-5,"from":1},{"account":12,"delta":5}]}`, "op.legs[0].from"},
		{`{"type":"composite","legs":[{"account":11,"delta":-9223372036854775809},{"account":12,"delta":5}]}`, "op.legs[0].delta"},
		{`{"type":"composite","legs":[{"account":11,"delta":null},{"account":12,"delta":5}]}`, "op.legs[0].delta"},
		{`{"type":"composite","legs":null}`, "op.legs"},
		{`{"type":"composite"}`, "op.legs"},
		{`{"type":"composite","legs":[{"account":11,"delta":-5},{"account":12,"delta":5}],"no_negative":1}`, "op.no_negative"},
		{`{"type":"composite","legs":[{"account":11,"delta":-5},{"account":12,"delta":5}],"amount":1}`, "op.amount"},
		{`[{"type":"deposit","account":13,"amount":1},{"type":"transfer","from":11,"amount":40}]`, "ops[1].to"},
		{`[{"type":"deposit","account":13,"amount":1},{"type":"deposit","account":13,"amount":1,"account":14}]`, "ops[1].account"},
		{`[{"type":"deposit","account":13,"amount":1},7]`, "ops[1]"},
	}
	for _, c := range cases {
		code, out := httpDo(t, "POST", u, c.body)
		require.Equal(t, 400, code, c.body)
		assert.Equal(t, float64(wire.CodeMalformed), out["code"], c.body)
		assert.Contains(t, out["error"], c.field, c.body)
	}
	bal2, x2 := strictState(t, f)
	assert.Equal(t, bal, bal2, "balances changed")
	assert.Equal(t, x, x2, "something was sequenced")
}

// strictOp is a msgpack op built value by value: uint64 and int64 encode as
// integers, []any as an array, anything else as msgpack encodes it.
func strictOp(e *msgpack.Encoder, vs []any) {
	_ = e.EncodeArrayLen(len(vs))
	for _, v := range vs {
		if a, ok := v.([]any); ok {
			strictOp(e, a)
			continue
		}
		_ = e.Encode(v)
	}
}

// TestStrictMsgpack: the binary protocol's half of the same table. Each op
// is sent alone (submit_wait, "op.") and after a valid op in a batch
// ("ops[1]."): refused with code 1 naming the field; nothing applied.
func TestStrictMsgpack(t *testing.T) {
	f := startServer(t, Config{})
	bal, x := fundStrict(t, f)
	const (
		dep = uint64(ledger.KindDeposit)
		tr  = uint64(ledger.KindTransfer)
		cp  = uint64(ledger.KindComposite)
	)
	u := func(v uint64) any { return v }
	legs := func(ls ...[]any) []any {
		out := make([]any, len(ls))
		for i, l := range ls {
			out[i] = l
		}
		return out
	}
	cases := []struct {
		op    any // []any, or nil for a msgpack nil op
		field string
	}{
		{nil, "op"},
		{[]any{tr, u(11), u(40), u(0)}, "kind"},              // no "to"
		{[]any{dep, u(13), u(1), u(0), u(14)}, "linked"},     // the optional field, not a boolean
		{[]any{dep, u(13), u(1), u(0), true, u(14)}, "kind"}, // a field too many
		{[]any{dep, nil, u(1), u(0)}, "account"},             // nil is not 0
		{[]any{dep, u(13), nil, u(0)}, "amount"},             // nil
		{[]any{dep, u(13), "1", u(0)}, "amount"},             // string
		{[]any{dep, u(13), 1.0, u(0)}, "amount"},             // float
		{[]any{dep, u(13), int64(-1), u(0)}, "amount"},       // negative
		{[]any{tr, u(0), u(12), u(10), u(0)}, "from"},        // system account
		{[]any{tr, u(11), u(0), u(10), u(0)}, "to"},          // system account
		{[]any{u(9), u(11), u(12), u(10)}, "kind"},           // unknown kind
		{[]any{cp, u(0), u(0), legs([]any{u(11), u(1<<64 - 1)}, []any{u(12), int64(1)})}, "legs[0].delta"},
		{[]any{cp, u(0), u(0), legs([]any{u(11), int64(-1)}, []any{u(12), nil})}, "legs[1].delta"},
		{[]any{cp, u(0), u(0), legs([]any{u(0), int64(-1)}, []any{u(12), int64(1)})}, "legs[0].account"},
		{[]any{cp, u(0), u(0), legs([]any{u(11), int64(-1), u(0)}, []any{u(12), int64(1)})}, "legs[0]"},
		{[]any{cp, u(0), u(0), nil}, "legs"},
		{[]any{cp, u(300), u(0), legs([]any{u(11), int64(-1)}, []any{u(12), int64(1)})}, "flags"},
	}
	r := newRaw(t, f)
	for i, c := range cases {
		var wait, batch bytes.Buffer
		ew, eb := msgpack.NewEncoder(&wait), msgpack.NewEncoder(&batch)
		_ = ew.EncodeArrayLen(2)
		_ = ew.EncodeUint(uint64(ledger.Committed))
		_ = eb.EncodeArrayLen(2)
		_ = eb.EncodeUint(uint64(ledger.Committed))
		_ = eb.EncodeArrayLen(2)
		strictOp(eb, []any{dep, u(13), u(1), u(0)})
		if c.op == nil {
			_ = ew.EncodeNil()
			_ = eb.EncodeNil()
		} else {
			strictOp(ew, c.op.([]any))
			strictOp(eb, c.op.([]any))
		}
		e := wire.NewEncoder()
		e.Raw(wire.TypeSubmitWait, uint64(2*i+1), wait.Bytes())
		e.Raw(wire.TypeSubmit, uint64(2*i+2), batch.Bytes())
		r.send(e.Bytes())
		for j, prefix := range []string{"op", "ops[1]"} {
			h, body := r.next()
			require.Equal(t, wire.TypeError, h.Type, "case %d %v", i, c.op)
			require.Equal(t, uint64(2*i+1+j), h.ID)
			we, err := r.dec.Error(body)
			require.NoError(t, err)
			assert.Equal(t, wire.CodeMalformed, we.Code, we.Message)
			want := prefix + "." + c.field
			if c.field == "op" {
				want = prefix + ":"
			}
			assert.True(t, strings.Contains(we.Message, want), "case %d: %q lacks %q", i, we.Message, want)
			if j == 1 {
				assert.Equal(t, 1, we.Index)
			}
		}
	}
	r.ping(999) // the connection survives malformed ops
	bal2, x2 := strictState(t, f)
	assert.Equal(t, bal, bal2, "balances changed")
	assert.Equal(t, x, x2, "something was sequenced")
}
