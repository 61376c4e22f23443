package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/lanework/lanework/ledger"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		ledger.Transfer{From: 1, To: 2, Amount: 5, UserRef: 1<<64 - 1},
		ledger.Composite{Legs: []ledger.Leg{{Account: 1, Delta: -3}, {Account: 2, Delta: 3}}, Flags: ledger.NoNegative, UserRef: 9},
		nil,
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
	fs := frames(t, e.Bytes(), 0)
	require.Len(t, fs, 9)
	d := NewDecoder()
	var req Request
	want := []Request{
		{},
		{Level: ledger.Committed, Ops: []ledger.Op{
			&ledger.Deposit{Account: 1, Amount: 100, UserRef: 7}, &ledger.Withdrawal{Account: 2, Amount: 1 << 40},
			&ledger.Transfer{From: 1, To: 2, Amount: 5, UserRef: 1<<64 - 1}, ops[3], nil}},
		{Level: ledger.Snapshot, Op: ops[2]},
		{Tx: 99, Level: ledger.Computed},
		{Account: 42},
		{Tx: 77},
		{Tx: 78},
		{},
		{},
	}
	types := []Type{TypePing, TypeSubmit, TypeSubmitWait, TypeWait, TypeBalance, TypeStatus, TypeResult, TypeIndexes, TypeSnapshot}
	for i, f := range fs {
		assert.Equal(t, types[i], f.h.Type)
		assert.Equal(t, uint64(i+1), f.h.ID)
		require.NoError(t, d.Request(f.h.Type, f.body, &req), f.h.Type)
		assert.Equal(t, want[i], req, f.h.Type)
	}
}

func TestResponseRoundTrip(t *testing.T) {
	res := ledger.Result{ID: 5, Kind: ledger.KindTransfer, Fail: ledger.OK, UserRef: 3, Timestamp: -1,
		Entries: []ledger.Entry{{Account: 1, Delta: -5, Balance: 10}, {Account: 2, Delta: 5, Balance: 1 << 62}}}
	x := ledger.Indexes{Sequenced: 9, Computed: 8, Committed: 7, Snapshot: 6}
	e := NewEncoder()
	e.Pong(1)
	e.Submitted(2, 10, 20)
	e.ResultIs(3, &res)
	e.Waited(4)
	e.BalanceIs(5, -12345678901)
	e.StatusIs(6, ledger.Committed)
	e.IndexesAre(7, x)
	e.Error(8, &Error{Code: CodeAccountRange, Index: 3, Message: "nope"})
	e.ResultIs(9, &ledger.Result{ID: 1, Fail: ledger.Duplicate, DupOf: 1})
	e.SnapshotTaken(10, 1<<40)
	fs := frames(t, e.Bytes(), 0)
	require.Len(t, fs, 10)
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
	assert.Equal(t, &Error{Code: CodeAccountRange, Index: 3, Message: "nope"}, we)
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
		{"truncated uint", TypeBalance, []byte{0x91, 0xcf, 0x00}},
		{"string for uint", TypeBalance, []byte{0x91, 0xa1, 'x'}},
		{"trailing bytes", TypeBalance, []byte{0x91, 0x01, 0x02}},
		{"huge op array", TypeSubmit, []byte{0x92, 0x00, 0xdd, 0xff, 0xff, 0xff, 0xff}},
		{"unknown kind", TypeSubmit, []byte{0x92, 0x00, 0x91, 0x94, 0x09, 0x01, 0x01, 0x00}},
		{"short op", TypeSubmit, []byte{0x92, 0x00, 0x91, 0x93, 0x03, 0x01, 0x02}},
		{"empty op", TypeSubmitWait, []byte{0x92, 0x00, 0x90}},
		{"level too big", TypeSubmitWait, []byte{0x92, 0xcd, 0x01, 0x00, 0xc0}},
		{"nil ops", TypeSubmit, []byte{0x92, 0x00, 0xc0}},
		{"empty body", TypeBalance, nil},
	}
	for _, c := range cases {
		err := d.Request(c.t, c.body, &req)
		assert.ErrorIs(t, err, ErrMalformed, c.name)
	}
	assert.ErrorIs(t, d.Request(Type(0x42), nil, &req), ErrUnknownType)
	// extra fields from a newer peer are skipped
	require.NoError(t, d.Request(TypeBalance, []byte{0x92, 0x07, 0xa1, 'x'}, &req))
	assert.Equal(t, uint64(7), req.Account)
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
	assert.False(t, Type(0x0a).IsRequest())
	assert.False(t, TypePong.IsRequest())
}

// FuzzRequest checks that no body panics the decoder.
func FuzzRequest(f *testing.F) {
	e := NewEncoder()
	e.Submit(1, ledger.Committed, []ledger.Op{ledger.Transfer{From: 1, To: 2, Amount: 3},
		ledger.Composite{Legs: []ledger.Leg{{Account: 1, Delta: 1}}}})
	f.Add(byte(TypeSubmit), e.Bytes()[LenSize+HeaderSize:])
	f.Add(byte(TypeBalance), []byte{0x91, 0x01})
	d := NewDecoder()
	f.Fuzz(func(t *testing.T, typ byte, body []byte) {
		var req Request
		_ = d.Request(Type(typ), body, &req)
		_, _ = d.ResultIs(body)
		_, _ = d.Error(body)
		_, _ = d.IndexesAre(body)
		_, _ = d.SnapshotTaken(body)
	})
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
