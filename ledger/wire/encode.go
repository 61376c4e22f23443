package wire

import (
	"encoding/binary"

	"github.com/lanework/lanework/ledger"
	"github.com/vmihailenco/msgpack/v5"
)

// Encoder appends frames to a reusable buffer, so that many frames leave
// in one write. It is not safe for concurrent use.
type Encoder struct {
	buf   appendBuf
	enc   *msgpack.Encoder
	start int // offset of the frame being written
}

// appendBuf is the msgpack writer: it never fails.
type appendBuf struct{ b []byte }

func (a *appendBuf) Write(p []byte) (int, error) { a.b = append(a.b, p...); return len(p), nil }
func (a *appendBuf) WriteByte(c byte) error      { a.b = append(a.b, c); return nil }

// NewEncoder returns an empty Encoder.
func NewEncoder() *Encoder {
	e := &Encoder{buf: appendBuf{b: make([]byte, 0, 4096)}}
	e.enc = msgpack.NewEncoder(&e.buf)
	return e
}

// Bytes returns the frames appended since the last Reset.
func (e *Encoder) Bytes() []byte { return e.buf.b }

// Len returns the number of bytes appended since the last Reset.
func (e *Encoder) Len() int { return len(e.buf.b) }

// Reset empties the buffer, keeping its memory.
func (e *Encoder) Reset() { e.buf.b = e.buf.b[:0] }

// Truncate drops everything after the first n bytes (to undo a frame).
func (e *Encoder) Truncate(n int) { e.buf.b = e.buf.b[:n] }

func (e *Encoder) begin(t Type, id uint64, fields int) {
	e.start = len(e.buf.b)
	var h [LenSize + HeaderSize]byte
	h[LenSize] = byte(t)
	binary.BigEndian.PutUint64(h[LenSize+1:], id)
	e.buf.b = append(e.buf.b, h[:]...)
	_ = e.enc.EncodeArrayLen(fields) // appendBuf never fails
}

// end patches the length of the frame being written and returns its size.
func (e *Encoder) end() int {
	n := len(e.buf.b) - e.start - LenSize
	binary.BigEndian.PutUint32(e.buf.b[e.start:], uint32(n))
	return n + LenSize
}

func (e *Encoder) u(v uint64) { _ = e.enc.EncodeUint(v) }
func (e *Encoder) i(v int64)  { _ = e.enc.EncodeInt(v) }

// Ping appends a TypePing request.
func (e *Encoder) Ping(id uint64) int { e.begin(TypePing, id, 0); return e.end() }

// Submit appends a TypeSubmit request for ops, answered once the last op
// reached level (ledger.Unknown or ledger.Sequenced: at once). Ops of an
// unknown type are encoded as nil and refused by the server.
func (e *Encoder) Submit(id uint64, level ledger.Level, ops []ledger.Op) int {
	e.begin(TypeSubmit, id, 2)
	e.u(uint64(level))
	_ = e.enc.EncodeArrayLen(len(ops))
	for _, op := range ops {
		e.op(op)
	}
	return e.end()
}

// SubmitWait appends a TypeSubmitWait request: submit op and answer its
// Result once it reached level.
func (e *Encoder) SubmitWait(id uint64, level ledger.Level, op ledger.Op) int {
	e.begin(TypeSubmitWait, id, 2)
	e.u(uint64(level))
	e.op(op)
	return e.end()
}

// Wait appends a TypeWait request.
func (e *Encoder) Wait(id uint64, tx ledger.TxID, level ledger.Level) int {
	e.begin(TypeWait, id, 2)
	e.u(uint64(tx))
	e.u(uint64(level))
	return e.end()
}

// Balance appends a TypeBalance request.
func (e *Encoder) Balance(id, account uint64) int {
	e.begin(TypeBalance, id, 1)
	e.u(account)
	return e.end()
}

// Lookup appends a TypeLookup request.
func (e *Encoder) Lookup(id, account uint64) int {
	e.begin(TypeLookup, id, 1)
	e.u(account)
	return e.end()
}

// Status appends a TypeStatus request.
func (e *Encoder) Status(id uint64, tx ledger.TxID) int {
	e.begin(TypeStatus, id, 1)
	e.u(uint64(tx))
	return e.end()
}

// Result appends a TypeResult request.
func (e *Encoder) Result(id uint64, tx ledger.TxID) int {
	e.begin(TypeResult, id, 1)
	e.u(uint64(tx))
	return e.end()
}

// Indexes appends a TypeIndexes request.
func (e *Encoder) Indexes(id uint64) int { e.begin(TypeIndexes, id, 0); return e.end() }

// Snapshot appends a TypeSnapshot request: write a snapshot now and answer
// once it is durable.
func (e *Encoder) Snapshot(id uint64) int { e.begin(TypeSnapshot, id, 0); return e.end() }

// Hello appends a TypeHello request: the connection's bearer token, sent
// first on a server that has tokens.
func (e *Encoder) Hello(id uint64, token string) int {
	e.begin(TypeHello, id, 1)
	_ = e.enc.EncodeString(token)
	return e.end()
}

// Welcome appends a TypeWelcome response naming what the token grants.
func (e *Encoder) Welcome(id uint64, scope string) int {
	e.begin(TypeWelcome, id, 1)
	_ = e.enc.EncodeString(scope)
	return e.end()
}

// Raw appends a frame of type t whose body is the given bytes, verbatim
// (tests use it to send malformed bodies).
func (e *Encoder) Raw(t Type, id uint64, body []byte) int {
	e.start = len(e.buf.b)
	var h [LenSize + HeaderSize]byte
	h[LenSize] = byte(t)
	binary.BigEndian.PutUint64(h[LenSize+1:], id)
	e.buf.b = append(e.buf.b, h[:]...)
	e.buf.b = append(e.buf.b, body...)
	return e.end()
}

// op encodes one op as [kind, ...fields]; nil, a nil pointer or an
// unknown type is encoded as msgpack nil, which the server refuses.
func (e *Encoder) op(op ledger.Op) {
	switch o := op.(type) {
	case ledger.CreateAccount:
		e.createAccount(&o)
		return
	case *ledger.CreateAccount:
		if o != nil {
			e.createAccount(o)
			return
		}
	case ledger.Deposit:
		e.single(ledger.KindDeposit, o.Account, o.Amount, o.UserRef, o.Linked)
		return
	case *ledger.Deposit:
		if o != nil {
			e.single(ledger.KindDeposit, o.Account, o.Amount, o.UserRef, o.Linked)
			return
		}
	case ledger.Withdrawal:
		e.single(ledger.KindWithdrawal, o.Account, o.Amount, o.UserRef, o.Linked)
		return
	case *ledger.Withdrawal:
		if o != nil {
			e.single(ledger.KindWithdrawal, o.Account, o.Amount, o.UserRef, o.Linked)
			return
		}
	case ledger.Transfer:
		e.transfer(&o)
		return
	case *ledger.Transfer:
		if o != nil {
			e.transfer(o)
			return
		}
	case ledger.Composite:
		e.composite(&o)
		return
	case *ledger.Composite:
		if o != nil {
			e.composite(o)
			return
		}
	}
	_ = e.enc.EncodeNil()
}

// linked appends the optional last element of an op: true for a linked op,
// nothing otherwise (n is the op's array length without it).
func (e *Encoder) opLen(n int, linked bool) {
	if linked {
		n++
	}
	_ = e.enc.EncodeArrayLen(n)
}

func (e *Encoder) linked(l bool) {
	if l {
		_ = e.enc.EncodeBool(true)
	}
}

func (e *Encoder) createAccount(o *ledger.CreateAccount) {
	e.opLen(8, o.Linked)
	e.u(uint64(ledger.KindCreateAccount))
	e.u(o.ID)
	e.u(uint64(o.Ledger))
	e.u(uint64(o.Code))
	e.u(uint64(o.Flags))
	e.u(o.UserData[0])
	e.u(o.UserData[1])
	e.u(o.UserRef)
	e.linked(o.Linked)
}

func (e *Encoder) single(k ledger.Kind, account, amount, ref uint64, linked bool) {
	e.opLen(4, linked)
	e.u(uint64(k))
	e.u(account)
	e.u(amount)
	e.u(ref)
	e.linked(linked)
}

// transfer encodes the short form [kind, from, to, amount, user_ref] when
// the transfer has none of the later fields (what a server before them
// reads), else the long form that adds ledger, code, user_data, flags,
// pending_id and timeout.
func (e *Encoder) transfer(o *ledger.Transfer) {
	long := o.Ledger != 0 || o.Code != 0 || o.UserData != 0 || o.Flags != 0 || o.PendingID != 0 || o.Timeout != 0
	n := 5
	if long {
		n = 11
	}
	e.opLen(n, o.Linked)
	e.u(uint64(ledger.KindTransfer))
	e.u(o.From)
	e.u(o.To)
	e.u(o.Amount)
	e.u(o.UserRef)
	if long {
		e.u(uint64(o.Ledger))
		e.u(uint64(o.Code))
		e.u(o.UserData)
		e.u(uint64(o.Flags))
		e.u(uint64(o.PendingID))
		e.u(uint64(o.Timeout))
	}
	e.linked(o.Linked)
}

func (e *Encoder) composite(o *ledger.Composite) {
	e.opLen(4, o.Linked)
	e.u(uint64(ledger.KindComposite))
	e.u(uint64(o.Flags))
	e.u(o.UserRef)
	_ = e.enc.EncodeArrayLen(len(o.Legs))
	for _, l := range o.Legs {
		_ = e.enc.EncodeArrayLen(2)
		e.u(l.Account)
		e.i(l.Delta)
	}
	e.linked(o.Linked)
}

// Pong appends a TypePong response.
func (e *Encoder) Pong(id uint64) int { e.begin(TypePong, id, 0); return e.end() }

// Submitted appends a TypeSubmitted response.
func (e *Encoder) Submitted(id uint64, first, last ledger.TxID) int {
	e.begin(TypeSubmitted, id, 2)
	e.u(uint64(first))
	e.u(uint64(last))
	return e.end()
}

// SubmittedResults appends a TypeSubmitted response carrying the per-op
// results of the batch first..last: [first, last, [result...]], each
// result as a TypeResultIs body.
func (e *Encoder) SubmittedResults(id uint64, first, last ledger.TxID, res []ledger.Result) int {
	e.begin(TypeSubmitted, id, 3)
	e.u(uint64(first))
	e.u(uint64(last))
	_ = e.enc.EncodeArrayLen(len(res))
	for i := range res {
		_ = e.enc.EncodeArrayLen(resultFields)
		e.result(&res[i])
	}
	return e.end()
}

// resultFields is the length of a result array.
const resultFields = 10

// ResultIs appends a TypeResultIs response:
// [id, kind, fail, user_ref, dup_of, timestamp, [[account, column, delta, value]...], account, transfer, expired],
// where account is a create_account's [id, ledger, code, flags, user_data_0, user_data_1], else nil,
// transfer a transfer's [ledger, code, flags, user_data, pending_id, timeout], else nil, and expired
// the pending transfers released before it ([tx...]).
func (e *Encoder) ResultIs(id uint64, r *ledger.Result) int {
	e.begin(TypeResultIs, id, resultFields)
	e.result(r)
	return e.end()
}

// result appends the fields of a result (the array header is the caller's).
func (e *Encoder) result(r *ledger.Result) {
	e.u(uint64(r.ID))
	e.u(uint64(r.Kind))
	e.u(uint64(r.Fail))
	e.u(r.UserRef)
	e.u(uint64(r.DupOf))
	e.i(r.Timestamp)
	_ = e.enc.EncodeArrayLen(len(r.Entries))
	for _, en := range r.Entries {
		_ = e.enc.EncodeArrayLen(4)
		e.u(en.Account)
		e.u(uint64(en.Column))
		e.i(en.Delta)
		e.i(en.Value)
	}
	if a := r.Account; a != nil {
		_ = e.enc.EncodeArrayLen(6)
		e.u(a.ID)
		e.u(uint64(a.Ledger))
		e.u(uint64(a.Code))
		e.u(uint64(a.Flags))
		e.u(a.UserData[0])
		e.u(a.UserData[1])
	} else {
		_ = e.enc.EncodeNil()
	}
	if r.Kind == ledger.KindTransfer && r.Fail != ledger.Duplicate {
		_ = e.enc.EncodeArrayLen(6)
		e.u(uint64(r.Ledger))
		e.u(uint64(r.Code))
		e.u(uint64(r.Flags))
		e.u(r.UserData)
		e.u(uint64(r.PendingID))
		e.u(uint64(r.Timeout))
	} else {
		_ = e.enc.EncodeNil()
	}
	_ = e.enc.EncodeArrayLen(len(r.Expired))
	for _, id := range r.Expired {
		e.u(uint64(id))
	}
}

// AccountIs appends a TypeAccountIs response: [id, ledger, code, flags,
// user_data_0, user_data_1, debits_posted, credits_posted, debits_pending,
// credits_pending].
func (e *Encoder) AccountIs(id uint64, a *ledger.Account) int {
	e.begin(TypeAccountIs, id, 10)
	e.u(a.ID)
	e.u(uint64(a.Ledger))
	e.u(uint64(a.Code))
	e.u(uint64(a.Flags))
	e.u(a.UserData[0])
	e.u(a.UserData[1])
	e.u(a.DebitsPosted)
	e.u(a.CreditsPosted)
	e.u(a.DebitsPending)
	e.u(a.CreditsPending)
	return e.end()
}

// Waited appends a TypeWaited response.
func (e *Encoder) Waited(id uint64) int { e.begin(TypeWaited, id, 0); return e.end() }

// BalanceIs appends a TypeBalanceIs response.
func (e *Encoder) BalanceIs(id uint64, balance int64) int {
	e.begin(TypeBalanceIs, id, 1)
	e.i(balance)
	return e.end()
}

// StatusIs appends a TypeStatusIs response.
func (e *Encoder) StatusIs(id uint64, level ledger.Level) int {
	e.begin(TypeStatusIs, id, 1)
	e.u(uint64(level))
	return e.end()
}

// IndexesAre appends a TypeIndexesAre response.
func (e *Encoder) IndexesAre(id uint64, x ledger.Indexes) int {
	e.begin(TypeIndexesAre, id, 4)
	e.u(uint64(x.Sequenced))
	e.u(uint64(x.Computed))
	e.u(uint64(x.Committed))
	e.u(uint64(x.Snapshot))
	return e.end()
}

// SnapshotTaken appends a TypeSnapshotTaken response: the last transaction
// the durable snapshot covers.
func (e *Encoder) SnapshotTaken(id uint64, tx ledger.TxID) int {
	e.begin(TypeSnapshotTaken, id, 1)
	e.u(uint64(tx))
	return e.end()
}

// Error appends a TypeError response.
func (e *Encoder) Error(id uint64, we *Error) int {
	e.begin(TypeError, id, 3)
	e.u(uint64(we.Code))
	e.i(int64(we.Index))
	_ = e.enc.EncodeString(truncate(we.Message))
	return e.end()
}
