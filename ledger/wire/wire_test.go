package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/lanework/lanework/ledger"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// frames splits the encoder's output back into frames.
func frames(t *testing.T, b []byte, max int) []struct {
	h    Header
	body []byte
} {
	t.Helper()
	fr := NewFrameReader(bytes.NewReader(b), max)
	var out []struct {
		h    Header
		body []byte
	}
	for {
		h, body, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, struct {
			h    Header
			body []byte
		}{h, append([]byte(nil), body...)})
	}
}

func TestRequestRoundTrip(t *testing.T) {
	ops := []ledger.Op{
		ledger.Deposit{Account: 1, Amount: 100, UserRef: 7},
		&ledger.Withdrawal{Account: 2, Amount: 1 << 40},
		ledger.Transfer{From: 1, To: 2, Amount: 5, UserRef: 1<<64 - 1, Linked: true},
		ledger.Composite{Legs: []ledger.Leg{{Account: 1, Delta: -3}, {Account: 2, Delta: 3}}, Flags: ledger.NoNegative, UserRef: 9, Linked: true},
		ledger.CreateAccount{ID: 1 << 63, Ledger: 1<<32 - 1, Code: 7, Flags: ledger.CreditsMustNotExceedDebits | ledger.History, UserData: [2]uint64{1, 1<<64 - 1}, UserRef: 4},
		ledger.Transfer{From: 1, To: 2, Amount: 5, Ledger: 1<<32 - 1, Code: 1<<16 - 1, UserData: 1<<64 - 1, Flags: ledger.Pending | ledger.ClosingDebit, Timeout: 1<<32 - 1},
		ledger.Transfer{Flags: ledger.VoidPendingTransfer, PendingID: 1 << 40, Linked: true},
	}
	e := NewEncoder()
	e.Ping(1)
	e.Submit(2, ledger.Committed, ops)
	e.SubmitWait(3, ledger.Snapshot, ops[2])
	e.Wait(4, 99, ledger.Computed)
	e.Balance(5, 42)
	e.Status(6, 77)
	e.Result(7, 78)
	e.Indexes(8)
	e.Snapshot(9)
	e.Lookup(10, 1<<64-1)
	fs := frames(t, e.Bytes(), 0)
	require.Len(t, fs, 10)
	d := NewDecoder()
	var req Request
	want := []Request{
		{},
		{Level: ledger.Committed, Ops: []ledger.Op{
			&ledger.Deposit{Account: 1, Amount: 100, UserRef: 7}, &ledger.Withdrawal{Account: 2, Amount: 1 << 40},
			&ledger.Transfer{From: 1, To: 2, Amount: 5, UserRef: 1<<64 - 1, Linked: true}, ops[3], ops[4],
			&ledger.Transfer{From: 1, To: 2, Amount: 5, Ledger: 1<<32 - 1, Code: 1<<16 - 1, UserData: 1<<64 - 1, Flags: ledger.Pending | ledger.ClosingDebit, Timeout: 1<<32 - 1},
			&ledger.Transfer{Flags: ledger.VoidPendingTransfer, PendingID: 1 << 40, Linked: true}}},
		{Level: ledger.Snapshot, Op: ops[2]},
		{Tx: 99, Level: ledger.Computed},
		{Account: 42},
		{Tx: 77},
		{Tx: 78},
		{},
		{},
		{Account: 1<<64 - 1},
	}
	types := []Type{TypePing, TypeSubmit, TypeSubmitWait, TypeWait, TypeBalance, TypeStatus, TypeResult, TypeIndexes, TypeSnapshot, TypeLookup}
	for i, f := range fs {
		assert.Equal(t, types[i], f.h.Type)
		assert.Equal(t, uint64(i+1), f.h.ID)
		require.NoError(t, d.Request(f.h.Type, f.body, &req), f.h.Type)
		assert.Equal(t, want[i], req, f.h.Type)
	}
}

func TestResponseRoundTrip(t *testing.T) {
	res := ledger.Result{ID: 5, Kind: ledger.KindTransfer, Fail: ledger.OK, UserRef: 3, Timestamp: -1,
		Ledger: 1<<32 - 1, Code: 9, Flags: ledger.PostPendingTransfer, UserData: 1<<64 - 1, PendingID: 4, Timeout: 0,
		Entries: []ledger.Entry{{Account: 1, Column: ledger.DebitsPosted, Delta: 5, Value: 10}, {Account: 2, Column: ledger.CreditsPending, Delta: -5, Value: 1 << 62}}}
	created := ledger.Result{ID: 6, Kind: ledger.KindCreateAccount, Fail: ledger.ExistsWithDifferentCode,
		Account: &ledger.Account{ID: 9, Ledger: 3, Code: 4, Flags: ledger.Closed, UserData: [2]uint64{5, 6}}}
	acct := ledger.Account{ID: 1<<64 - 1, Ledger: 2, Code: 1, Flags: ledger.DebitsMustNotExceedCredits, UserData: [2]uint64{0, 3},
		DebitsPosted: 1, CreditsPosted: 1<<63 - 1, DebitsPending: 2, CreditsPending: 3}
	x := ledger.Indexes{Sequenced: 9, Computed: 8, Committed: 7, Snapshot: 6}
	e := NewEncoder()
	e.Pong(1)
	e.Submitted(2, 10, 20)
	e.ResultIs(3, &res)
	e.Waited(4)
	e.BalanceIs(5, -12345678901)
	e.StatusIs(6, ledger.Committed)
	e.IndexesAre(7, x)
	e.Error(8, &Error{Code: CodeAccountNotFound, Index: 3, Message: "nope"})
	e.ResultIs(9, &ledger.Result{ID: 1, Fail: ledger.Duplicate, DupOf: 1})
	e.SnapshotTaken(10, 1<<40)
	e.ResultIs(11, &created)
	e.AccountIs(12, &acct)
	e.SubmittedResults(13, 5, 6, []ledger.Result{res, created})
	fs := frames(t, e.Bytes(), 0)
	require.Len(t, fs, 13)
	d := NewDecoder()
	require.NoError(t, d.Empty(fs[0].body))
	f, l, err := d.Submitted(fs[1].body)
	require.NoError(t, err)
	assert.Equal(t, [2]ledger.TxID{10, 20}, [2]ledger.TxID{f, l})
	got, err := d.ResultIs(fs[2].body)
	require.NoError(t, err)
	assert.Equal(t, res, got)
	require.NoError(t, d.Empty(fs[3].body))
	b, err := d.BalanceIs(fs[4].body)
	require.NoError(t, err)
	assert.Equal(t, int64(-12345678901), b)
	lv, err := d.StatusIs(fs[5].body)
	require.NoError(t, err)
	assert.Equal(t, ledger.Committed, lv)
	gx, err := d.IndexesAre(fs[6].body)
	require.NoError(t, err)
	assert.Equal(t, x, gx)
	we, err := d.Error(fs[7].body)
	require.NoError(t, err)
	assert.Equal(t, &Error{Code: CodeAccountNotFound, Index: 3, Message: "nope"}, we)
	assert.Equal(t, TypeError, fs[7].h.Type)
	got, err = d.ResultIs(fs[8].body)
	require.NoError(t, err)
	assert.Equal(t, ledger.Result{ID: 1, Fail: ledger.Duplicate, DupOf: 1}, got)
	assert.Equal(t, TypeSnapshotTaken, fs[9].h.Type)
	tx, err := d.SnapshotTaken(fs[9].body)
	require.NoError(t, err)
	assert.Equal(t, ledger.TxID(1<<40), tx)
	_, err = d.SnapshotTaken(fs[0].body) // [] has no tx id
	assert.ErrorIs(t, err, ErrMalformed)
	got, err = d.ResultIs(fs[10].body)
	require.NoError(t, err)
	assert.Equal(t, created, got)
	assert.Equal(t, TypeAccountIs, fs[11].h.Type)
	ga, err := d.AccountIs(fs[11].body)
	require.NoError(t, err)
	assert.Equal(t, acct, ga)
	assert.Equal(t, TypeSubmitted, fs[12].h.Type)
	f, l, rs, err := d.SubmittedResults(fs[12].body)
	require.NoError(t, err)
	assert.Equal(t, [2]ledger.TxID{5, 6}, [2]ledger.TxID{f, l})
	assert.Equal(t, []ledger.Result{res, created}, rs)
	f, l, err = d.Submitted(fs[12].body) // a reader of first and last only skips the results
	require.NoError(t, err)
	assert.Equal(t, [2]ledger.TxID{5, 6}, [2]ledger.TxID{f, l})
	f, l, rs, err = d.SubmittedResults(fs[1].body)
	require.NoError(t, err)
	assert.Equal(t, [2]ledger.TxID{10, 20}, [2]ledger.TxID{f, l})
	assert.Nil(t, rs)
}

func TestErrorMapping(t *testing.T) {
	in := &ledger.InputError{Index: 4, Err: ledger.ErrSameAccount}
	we := AsError(in)
	assert.Equal(t, CodeSameAccount, we.Code)
	assert.Equal(t, 4, we.Index)
	back := we.Err()
	assert.ErrorIs(t, back, ledger.ErrSameAccount)
	var ie *ledger.InputError
	require.ErrorAs(t, back, &ie)
	assert.Equal(t, 4, ie.Index)
	assert.Equal(t, "op 4: server error 22: "+ledger.ErrSameAccount.Error(), back.Error(),
		"the index is named once")

	for _, c := range errCodes {
		got := AsError(fmt.Errorf("wrapped: %w", c.err))
		assert.Equal(t, c.code, got.Code, c.err)
		assert.ErrorIs(t, got.Err(), c.err)
	}
	assert.Equal(t, CodeInternal, AsError(errors.New("disk on fire")).Code)
	assert.ErrorIs(t, (&Error{Code: CodeFailed}).Err(), ledger.ErrFailed)
	assert.Nil(t, (&Error{Code: 999}).Unwrap())
}

func TestMalformedBodies(t *testing.T) {
	d := NewDecoder()
	var req Request
	cases := []struct {
		name string
		t    Type
		body []byte
	}{
		{"not an array", TypeBalance, []byte{0x05}},
		{"too few fields", TypeWait, []byte{0x91, 0x01}},
		{"extra field", TypeBalance, []byte{0x92, 0x07, 0xa1, 'x'}},
		{"truncated uint", TypeBalance, []byte{0x91, 0xcf, 0x00}},
		{"string for uint", TypeBalance, []byte{0x91, 0xa1, 'x'}},
		{"nil for uint", TypeBalance, []byte{0x91, 0xc0}},
		{"negative account", TypeBalance, []byte{0x91, 0xff}},
		{"trailing bytes", TypeBalance, []byte{0x91, 0x01, 0x02}},
		{"huge op array", TypeSubmit, []byte{0x92, 0x00, 0xdd, 0xff, 0xff, 0xff, 0xff}},
		{"level too big", TypeSubmitWait, []byte{0x92, 0xcd, 0x01, 0x00, 0xc0}},
		{"nil ops", TypeSubmit, []byte{0x92, 0x00, 0xc0}},
		{"empty body", TypeBalance, nil},
		{"hello without token", TypeHello, []byte{0x91, 0xa0}},
		{"hello nil token", TypeHello, []byte{0x91, 0xc0}},
	}
	for _, c := range cases {
		err := d.Request(c.t, c.body, &req)
		assert.ErrorIs(t, err, ErrMalformed, c.name)
	}
	assert.ErrorIs(t, d.Request(Type(0x42), nil, &req), ErrUnknownType)
}

// opBody encodes a submit_wait body [level, op] whose op is the msgpack
// value built by f, and a submit body [level, [op]] holding the same op.
func opBodies(f func(e *msgpack.Encoder)) (wait, batch []byte) {
	var a, b bytes.Buffer
	ea, eb := msgpack.NewEncoder(&a), msgpack.NewEncoder(&b)
	_ = ea.EncodeArrayLen(2)
	_ = ea.EncodeUint(uint64(ledger.Committed))
	f(ea)
	_ = eb.EncodeArrayLen(2)
	_ = eb.EncodeUint(uint64(ledger.Committed))
	_ = eb.EncodeArrayLen(1)
	f(eb)
	return a.Bytes(), b.Bytes()
}

// vals encodes an array of values: uint64 and int64 as integers, nil, string
// and float64 as themselves, []any as a nested array.
func vals(vs ...any) func(e *msgpack.Encoder) {
	return func(e *msgpack.Encoder) {
		_ = e.EncodeArrayLen(len(vs))
		for _, v := range vs {
			switch v := v.(type) {
			case []any:
				vals(v...)(e)
			default:
				_ = e.Encode(v)
			}
		}
	}
}

// TestMalformedOps is the msgpack half of the op rule (oprule.go): each
// malformed op is refused as malformed, naming its field, both as the op
// of a submit_wait ("op.") and inside a batch ("ops[0].").
func TestMalformedOps(t *testing.T) {
	const (
		dep = uint64(ledger.KindDeposit)
		wd  = uint64(ledger.KindWithdrawal)
		tr  = uint64(ledger.KindTransfer)
		cp  = uint64(ledger.KindComposite)
	)
	leg := func(a any, d any) []any { return []any{a, d} }
	cases := []struct {
		name  string
		op    func(*msgpack.Encoder)
		field string
	}{
		{"nil op", func(e *msgpack.Encoder) { _ = e.EncodeNil() }, "op"},
		{"op not an array", func(e *msgpack.Encoder) { _ = e.EncodeUint(1) }, "op"},
		{"empty op", vals(), "kind"},
		{"nil kind", vals(nil, uint64(1), uint64(1), uint64(0)), "kind"},
		{"unknown kind", vals(uint64(9), uint64(1), uint64(1), uint64(0)), "kind"},
		{"kind 0", vals(uint64(0), uint64(1), uint64(1), uint64(0)), "kind"},
		{"transfer without to", vals(tr, uint64(11), uint64(40), uint64(0)), "kind"},
		{"deposit with a transfer's fields", vals(dep, uint64(1), uint64(2), uint64(3), uint64(0)), "linked"}, // the one optional extra field
		{"deposit with two extra fields", vals(dep, uint64(1), uint64(2), uint64(3), true, true), "kind"},
		{"linked not a boolean", vals(tr, uint64(1), uint64(2), uint64(3), uint64(0), nil), "linked"},
		{"deposit short", vals(dep, uint64(1), uint64(2)), "kind"},
		{"nil account", vals(dep, nil, uint64(2), uint64(0)), "account"},
		{"string amount", vals(dep, uint64(1), "5", uint64(0)), "amount"},
		{"float amount", vals(wd, uint64(1), 5.0, uint64(0)), "amount"},
		{"negative amount", vals(wd, uint64(1), int64(-5), uint64(0)), "amount"},
		{"bool user_ref", vals(wd, uint64(1), uint64(5), true), "user_ref"},
		{"nil to", vals(tr, uint64(1), nil, uint64(5), uint64(0)), "to"},
		{"transfer to the system account", vals(tr, uint64(1), uint64(0), uint64(5), uint64(0)), "to"},
		{"transfer from the system account", vals(tr, uint64(0), uint64(1), uint64(5), uint64(0)), "from"},
		{"transfer with 7 fields", vals(tr, uint64(1), uint64(2), uint64(5), uint64(0), uint64(1), uint64(1), uint64(1)), "kind"},
		{"transfer ledger above u32", vals(tr, uint64(1), uint64(2), uint64(5), uint64(0), uint64(1<<32), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0)), "ledger"},
		{"transfer code above u16", vals(tr, uint64(1), uint64(2), uint64(5), uint64(0), uint64(1), uint64(1<<16), uint64(0), uint64(0), uint64(0), uint64(0)), "code"},
		{"transfer flags nil", vals(tr, uint64(1), uint64(2), uint64(5), uint64(0), uint64(1), uint64(0), uint64(0), nil, uint64(0), uint64(0)), "flags"},
		{"transfer timeout above u32", vals(tr, uint64(1), uint64(2), uint64(5), uint64(0), uint64(1), uint64(0), uint64(0), uint64(1), uint64(0), uint64(1<<32)), "timeout"},
		{"long transfer linked not a boolean", vals(tr, uint64(1), uint64(2), uint64(5), uint64(0), uint64(1), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(1)), "linked"},
		{"composite flags nil", vals(cp, nil, uint64(0), []any{leg(uint64(1), int64(-1)), leg(uint64(2), int64(1))}), "flags"},
		{"composite flags above a byte", vals(cp, uint64(256), uint64(0), []any{leg(uint64(1), int64(-1)), leg(uint64(2), int64(1))}), "flags"},
		{"composite legs nil", vals(cp, uint64(0), uint64(0), nil), "legs"},
		{"composite leg delta 2^64-1", vals(cp, uint64(0), uint64(0), []any{leg(uint64(1), uint64(1<<64-1)), leg(uint64(2), int64(1))}), "legs[0].delta"},
		{"composite leg delta nil", vals(cp, uint64(0), uint64(0), []any{leg(uint64(1), int64(-1)), leg(uint64(2), nil)}), "legs[1].delta"},
		{"composite leg account nil", vals(cp, uint64(0), uint64(0), []any{leg(nil, int64(-1)), leg(uint64(2), int64(1))}), "legs[0].account"},
		{"composite leg on the system account", vals(cp, uint64(0), uint64(0), []any{leg(uint64(0), int64(-1)), leg(uint64(2), int64(1))}), "legs[0].account"},
		{"composite leg with 3 fields", vals(cp, uint64(0), uint64(0), []any{[]any{uint64(1), int64(-1), uint64(0)}, leg(uint64(2), int64(1))}), "legs[0]"},
		{"composite leg not an array", vals(cp, uint64(0), uint64(0), []any{uint64(1)}), "legs[0]"},
		{"composite with 4 fields", vals(cp, uint64(0), uint64(0), []any{leg(uint64(1), int64(-1)), leg(uint64(2), int64(1))}, uint64(0)), "linked"},
		{"composite with 5 fields", vals(cp, uint64(0), uint64(0), []any{leg(uint64(1), int64(-1)), leg(uint64(2), int64(1))}, true, true), "kind"},
	}
	d := NewDecoder()
	for _, c := range cases {
		wait, batch := opBodies(c.op)
		var req Request
		err := d.Request(TypeSubmitWait, wait, &req)
		require.ErrorIs(t, err, ErrMalformed, c.name)
		want := "op." + c.field
		if c.field == "op" {
			want = "op:"
		}
		assert.Contains(t, err.Error(), want, c.name)
		err = d.Request(TypeSubmit, batch, &req)
		require.ErrorIs(t, err, ErrMalformed, c.name)
		var ie *ledger.InputError
		require.ErrorAs(t, err, &ie, c.name)
		assert.Equal(t, 0, ie.Index, c.name)
		assert.Contains(t, err.Error(), "ops[0]"+strings.TrimPrefix(want, "op"), c.name)
		we := AsError(err)
		assert.Equal(t, CodeMalformed, we.Code, c.name)
	}
}

// TestStrictIntegers: any msgpack integer encoding of an in-range value is
// accepted (other encoders pick int64 for positive values), and decodes to
// the same op.
func TestStrictIntegers(t *testing.T) {
	d := NewDecoder()
	var req Request
	wait, _ := opBodies(vals(uint64(ledger.KindComposite), int64(1), int64(7),
		[]any{[]any{int64(1), uint64(5)}, []any{uint64(2), int64(-5)}}))
	require.NoError(t, d.Request(TypeSubmitWait, wait, &req))
	assert.Equal(t, ledger.Composite{Legs: []ledger.Leg{{Account: 1, Delta: 5}, {Account: 2, Delta: -5}},
		Flags: ledger.NoNegative, UserRef: 7}, req.Op)
	wait, _ = opBodies(vals(uint64(ledger.KindComposite), uint64(0), uint64(0),
		[]any{[]any{uint64(1), uint64(1<<63 - 1)}, []any{uint64(2), int64(-1 << 63)}}))
	require.NoError(t, d.Request(TypeSubmitWait, wait, &req))
	assert.Equal(t, int64(1<<63-1), req.Op.(ledger.Composite).Legs[0].Delta)
}

func TestFrameReaderLimits(t *testing.T) {
	var b bytes.Buffer
	hdr := func(n uint32, typ Type, id uint64) {
		var h [13]byte
		binary.BigEndian.PutUint32(h[:], n)
		h[4] = byte(typ)
		binary.BigEndian.PutUint64(h[5:], id)
		b.Write(h[:])
	}
	hdr(1000, TypeSubmit, 77)
	fr := NewFrameReader(bufio.NewReader(&b), 100)
	h, _, err := fr.Next()
	assert.ErrorIs(t, err, ErrFrameTooLarge)
	assert.Equal(t, Header{Type: TypeSubmit, ID: 77}, h)

	b.Reset()
	b.Write([]byte{0, 0, 0, 3, 1, 2, 3})
	_, _, err = NewFrameReader(&b, 0).Next()
	assert.ErrorIs(t, err, ErrFrameTooShort)

	b.Reset()
	hdr(20, TypePing, 1)
	b.Write([]byte{1, 2})
	_, _, err = NewFrameReader(&b, 0).Next()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)

	b.Reset()
	b.Write([]byte{0, 0})
	_, _, err = NewFrameReader(&b, 0).Next()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)

	_, _, err = NewFrameReader(bytes.NewReader(nil), 0).Next()
	assert.ErrorIs(t, err, io.EOF)
}

func TestTypeNames(t *testing.T) {
	assert.Equal(t, "submit", TypeSubmit.String())
	assert.Equal(t, "type(0x42)", Type(0x42).String())
	assert.True(t, TypeIndexes.IsRequest())
	assert.True(t, TypeSnapshot.IsRequest())
	assert.Equal(t, "snapshot", TypeSnapshot.String())
	assert.Equal(t, "snapshot_taken", TypeSnapshotTaken.String())
	assert.True(t, TypeHello.IsRequest())
	assert.Equal(t, "welcome", TypeWelcome.String())
	assert.True(t, TypeLookup.IsRequest())
	assert.Equal(t, "account_is", TypeAccountIs.String())
	assert.False(t, Type(0x0c).IsRequest())
	assert.False(t, TypePong.IsRequest())
}

// FuzzRequest checks that no body panics the decoder, and that a request
// it accepts re-encodes to a body that decodes to the same request: the
// decoder drops, casts and defaults nothing.
func FuzzRequest(f *testing.F) {
	e := NewEncoder()
	e.Submit(1, ledger.Committed, []ledger.Op{ledger.Transfer{From: 1, To: 2, Amount: 3},
		ledger.Composite{Legs: []ledger.Leg{{Account: 1, Delta: 1}}}, ledger.Deposit{Account: 3, Amount: 4, UserRef: 5}})
	f.Add(byte(TypeSubmit), e.Bytes()[LenSize+HeaderSize:])
	e = NewEncoder()
	e.SubmitWait(1, ledger.Computed, ledger.Withdrawal{Account: 3, Amount: 4, UserRef: 5})
	f.Add(byte(TypeSubmitWait), e.Bytes()[LenSize+HeaderSize:])
	f.Add(byte(TypeBalance), []byte{0x91, 0x01})
	f.Add(byte(TypeLookup), []byte{0x91, 0x01})
	f.Add(byte(TypeSubmitWait), []byte{0x92, 0x01, 0x98, 0x05, 0x07, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00})
	f.Add(byte(TypeHello), []byte{0x91, 0xa3, 'a', 'b', 'c'})
	d, d2 := NewDecoder(), NewDecoder()
	f.Fuzz(func(t *testing.T, typ byte, body []byte) {
		var req Request
		err := d.Request(Type(typ), body, &req)
		if err == nil {
			again := reencode(t, Type(typ), &req)
			var req2 Request
			if err := d2.Request(Type(typ), again, &req2); err != nil {
				t.Fatalf("re-encoded %x refused: %v", again, err)
			}
			if !reflect.DeepEqual(req, req2) {
				t.Fatalf("%+v re-encoded as %+v", req, req2)
			}
		} else if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownType) {
			t.Fatalf("error of no known kind: %v", err)
		}
		_, _ = d.ResultIs(body)
		_, _ = d.Error(body)
		_, _ = d.IndexesAre(body)
		_, _ = d.SnapshotTaken(body)
		_, _ = d.AccountIs(body)
		_, _, _, _ = d.SubmittedResults(body)
	})
}

// reencode encodes req as a request of type t with the Encoder, and
// returns its body.
func reencode(t *testing.T, typ Type, req *Request) []byte {
	e := NewEncoder()
	switch typ {
	case TypePing:
		e.Ping(1)
	case TypeSubmit:
		e.Submit(1, req.Level, req.Ops)
	case TypeSubmitWait:
		e.SubmitWait(1, req.Level, req.Op)
	case TypeWait:
		e.Wait(1, req.Tx, req.Level)
	case TypeBalance:
		e.Balance(1, req.Account)
	case TypeLookup:
		e.Lookup(1, req.Account)
	case TypeStatus:
		e.Status(1, req.Tx)
	case TypeResult:
		e.Result(1, req.Tx)
	case TypeIndexes:
		e.Indexes(1)
	case TypeSnapshot:
		e.Snapshot(1)
	case TypeHello:
		e.Hello(1, string(req.Token))
	default:
		t.Fatalf("accepted unknown type %v", typ)
	}
	return e.Bytes()[LenSize+HeaderSize:]
}

func BenchmarkDecodeSubmit(b *testing.B) {
	ops := make([]ledger.Op, 1000)
	for i := range ops {
		ops[i] = ledger.Transfer{From: uint64(i%1000 + 1), To: uint64(i%997 + 2), Amount: 10}
	}
	e := NewEncoder()
	e.Submit(1, 0, ops)
	body := e.Bytes()[LenSize+HeaderSize:]
	d := NewDecoder()
	var req Request
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Request(TypeSubmit, body, &req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "ops/s")
}

func BenchmarkEncodeSubmit(b *testing.B) {
	ops := make([]ledger.Op, 1000)
	for i := range ops {
		ops[i] = ledger.Transfer{From: uint64(i%1000 + 1), To: uint64(i%997 + 2), Amount: 10}
	}
	e := NewEncoder()
	b.ReportAllocs()
	for b.Loop() {
		e.Reset()
		e.Submit(1, 0, ops)
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "ops/s")
}

// TestProtocolDocExamples pins the byte examples of docs/ledger-protocol.md.
func TestProtocolDocExamples(t *testing.T) {
	hex := func(e *Encoder) string { return fmt.Sprintf("% x", e.Bytes()) }
	e := NewEncoder()
	e.Ping(1)
	assert.Equal(t, "00 00 00 0a 01 00 00 00 00 00 00 00 01 90", hex(e))
	e = NewEncoder()
	e.Submit(2, ledger.Committed, []ledger.Op{ledger.Deposit{Account: 1, Amount: 100}})
	assert.Equal(t, "00 00 00 11 02 00 00 00 00 00 00 00 02 92 03 91 94 01 01 64 00", hex(e))
	e = NewEncoder()
	e.Submitted(2, 1, 1)
	assert.Equal(t, "00 00 00 0c 82 00 00 00 00 00 00 00 02 92 01 01", hex(e))
	e = NewEncoder()
	e.Snapshot(3)
	assert.Equal(t, "00 00 00 0a 09 00 00 00 00 00 00 00 03 90", hex(e))
	e = NewEncoder()
	e.SnapshotTaken(3, 1000)
	assert.Equal(t, "00 00 00 0d 89 00 00 00 00 00 00 00 03 91 cd 03 e8", hex(e))
}
