package wire

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/lanework/lanework/ledger"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Request is a decoded request body. Which fields are set depends on the
// type: Submit (Level, Ops), SubmitWait (Level, Op), Wait (Tx, Level),
// Balance (Account), Status and Result (Tx), Hello (Token); Ping, Indexes
// and Snapshot have none.
type Request struct {
	Level   ledger.Level
	Ops     []ledger.Op // valid until the Decoder's next call; see Decoder
	Op      ledger.Op   // owned by the caller
	Tx      ledger.TxID
	Account uint64
	Token   []byte      // valid until the Decoder's next call
	Read    ReadRequest // the read types (read.go)
}

// Decoder decodes message bodies. It is not safe for concurrent use. To
// decode a batch without allocating per op, the Deposit, Withdrawal and
// Transfer ops of Request.Ops point into buffers the Decoder reuses on its
// next call; copy them (ledger.SubmitBatch does) before then. Composite
// legs are always freshly allocated, because the ledger keeps them.
type Decoder struct {
	r   bytes.Reader
	dec *msgpack.Decoder

	*opArena
	own opArena // the arena of small batches, kept
	tok []byte
}

// opArena holds a batch's ops. Batches of up to smallBatch ops use the
// Decoder's own; a larger batch borrows one from arenas, which Release
// gives back, so an idle connection keeps no batch memory.
type opArena struct {
	ops  []ledger.Op
	deps []ledger.Deposit
	wds  []ledger.Withdrawal
	trs  []ledger.Transfer
}

const smallBatch = 64

var arenas = sync.Pool{New: func() any { return new(opArena) }}

// Release gives back a large batch's buffers: the ops of the last Request
// must not be used after. The server calls it once the batch is submitted.
func (d *Decoder) Release() {
	if d.opArena != &d.own {
		*d.opArena = opArena{ops: d.ops[:0], deps: d.deps[:0], wds: d.wds[:0], trs: d.trs[:0]}
		arenas.Put(d.opArena)
		d.opArena = &d.own
	}
}

// NewDecoder returns a Decoder.
func NewDecoder() *Decoder {
	d := &Decoder{}
	d.opArena = &d.own
	d.dec = msgpack.NewDecoder(&d.r)
	return d
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

func (d *Decoder) reset(body []byte) {
	d.Release()
	d.r.Reset(body)
	d.dec.ResetReader(&d.r)
}

// open reads the body's array header and checks it has at least min
// fields; it returns the number of extra fields, which finish skips.
// Responses use it: a newer server may append fields.
func (d *Decoder) open(min int) (int, error) {
	if d.r.Len() == 0 && min == 0 {
		return 0, nil // an empty body stands for []
	}
	n, err := d.arrayLen()
	if err != nil {
		return 0, err
	}
	if n < min {
		return 0, malformed("body has %d fields, want %d", n, min)
	}
	return n - min, nil
}

// openExact reads a request body's array header, which must have exactly
// n fields: a request is refused rather than partly understood.
func (d *Decoder) openExact(n int) error {
	if d.r.Len() == 0 && n == 0 {
		return nil // an empty body stands for []
	}
	got, err := d.arrayLen()
	if err != nil {
		return err
	}
	if got != n {
		return malformed("body has %d fields, want %d", got, n)
	}
	return nil
}

// finish skips extra fields (sent by a newer peer) and refuses trailing
// bytes.
func (d *Decoder) finish(extra int) error {
	for ; extra > 0; extra-- {
		if err := d.dec.Skip(); err != nil {
			return malformed("%v", err)
		}
	}
	if d.r.Len() != 0 {
		return malformed("%d trailing bytes", d.r.Len())
	}
	return nil
}

// arrayLen reads an array header whose length is plausible for the bytes
// left (each element takes at least one byte); nil is refused.
func (d *Decoder) arrayLen() (int, error) {
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return 0, malformed("%v", err)
	}
	if n < 0 {
		return 0, malformed("nil where an array is required")
	}
	if n > d.r.Len() {
		return 0, malformed("array of %d with %d bytes left", n, d.r.Len())
	}
	return n, nil
}

// u reads a response's unsigned field (lenient, as msgpack casts).
func (d *Decoder) u() (uint64, error) {
	v, err := d.dec.DecodeUint64()
	if err != nil {
		return 0, malformed("%v", err)
	}
	return v, nil
}

// i reads a response's signed field.
func (d *Decoder) i() (int64, error) {
	v, err := d.dec.DecodeInt64()
	if err != nil {
		return 0, malformed("%v", err)
	}
	return v, nil
}

// uints reads response fields into dst.
func (d *Decoder) uints(dst ...*uint64) error {
	for _, p := range dst {
		v, err := d.u()
		if err != nil {
			return err
		}
		*p = v
	}
	return nil
}

func (d *Decoder) finishOp(extra int) error {
	for ; extra > 0; extra-- {
		if err := d.dec.Skip(); err != nil {
			return malformed("%v", err)
		}
	}
	return nil
}

// token reads a hello's token: a string or binary of 1 to MaxToken bytes.
func (d *Decoder) token() ([]byte, error) {
	c, err := d.dec.PeekCode()
	if err != nil {
		return nil, malformed("token: missing")
	}
	if !msgpcode.IsString(c) && !msgpcode.IsBin(c) {
		return nil, malformed("token: want a string, got %s", codeName(c))
	}
	n, err := d.dec.DecodeBytesLen()
	if err != nil {
		return nil, malformed("token: %v", err)
	}
	if n < 1 || n > MaxToken || n > d.r.Len() {
		return nil, malformed("token: length %d out of [1, %d]", n, MaxToken)
	}
	if cap(d.tok) < n {
		d.tok = make([]byte, MaxToken)
	}
	d.tok = d.tok[:n]
	if _, err := io.ReadFull(&d.r, d.tok); err != nil {
		return nil, malformed("token: %v", err)
	}
	return d.tok, nil
}

// uintOf reads a request's unsigned field strictly: any msgpack integer
// encoding of a value in [0, 2^64), nothing else (rule 2 of oprule.go).
// The problem is returned as a short text for the caller to name the
// field with; "" means ok.
func (d *Decoder) uintOf() (uint64, string) {
	c, err := d.dec.PeekCode()
	if err != nil {
		return 0, "missing"
	}
	switch {
	case c <= msgpcode.PosFixedNumHigh || (c >= msgpcode.Uint8 && c <= msgpcode.Uint64):
		v, err := d.dec.DecodeUint64()
		if err != nil {
			return 0, "truncated integer"
		}
		return v, ""
	case c >= msgpcode.NegFixedNumLow || (c >= msgpcode.Int8 && c <= msgpcode.Int64):
		v, err := d.dec.DecodeInt64()
		if err != nil {
			return 0, "truncated integer"
		}
		if v < 0 {
			return 0, "negative, want an unsigned integer"
		}
		return uint64(v), ""
	}
	return 0, "want an unsigned integer, got " + codeName(c)
}

// intOf reads a request's signed field strictly: any msgpack integer
// encoding of a value in the int64 range.
func (d *Decoder) intOf() (int64, string) {
	c, err := d.dec.PeekCode()
	if err != nil {
		return 0, "missing"
	}
	switch {
	case c == msgpcode.Uint64:
		v, err := d.dec.DecodeUint64()
		if err != nil {
			return 0, "truncated integer"
		}
		if v > math.MaxInt64 {
			return 0, fmt.Sprintf("%d out of the int64 range", v)
		}
		return int64(v), ""
	case msgpcode.IsFixedNum(c) || (c >= msgpcode.Uint8 && c <= msgpcode.Int64):
		v, err := d.dec.DecodeInt64()
		if err != nil {
			return 0, "truncated integer"
		}
		return v, ""
	}
	return 0, "want an integer, got " + codeName(c)
}

// codeName names the msgpack type that starts with code c.
func codeName(c byte) string {
	switch {
	case c == msgpcode.Nil:
		return "nil"
	case msgpcode.IsFixedNum(c) || (c >= msgpcode.Uint8 && c <= msgpcode.Int64):
		return "an integer"
	case c == msgpcode.True || c == msgpcode.False:
		return "a boolean"
	case c == msgpcode.Float || c == msgpcode.Double:
		return "a float"
	case msgpcode.IsString(c):
		return "a string"
	case msgpcode.IsBin(c):
		return "binary"
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		return "an array"
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		return "a map"
	}
	return fmt.Sprintf("an extension (0x%02x)", c)
}

// field reads a request body's unsigned field name.
func (d *Decoder) field(name string) (uint64, error) {
	v, p := d.uintOf()
	if p != "" {
		return 0, malformed("%s: %s", name, p)
	}
	return v, nil
}

func (d *Decoder) level() (ledger.Level, error) {
	v, err := d.field("level")
	if err != nil {
		return 0, err
	}
	if v > math.MaxUint8 {
		return 0, malformed("level: %d out of range", v)
	}
	return ledger.Level(v), nil
}

// Request decodes the body of a request of type t into req (which it
// resets). Each type has exactly its fields (see TypePing ...), and ops
// follow the rule of oprule.go. It fails with an error wrapping
// ErrMalformed that names the field, or ErrUnknownType.
func (d *Decoder) Request(t Type, body []byte, req *Request) error {
	d.reset(body)
	*req = Request{}
	var err error
	switch t {
	case TypePing, TypeIndexes, TypeSnapshot:
		err = d.openExact(0)
	case TypeSubmit:
		if err = d.openExact(2); err == nil {
			if req.Level, err = d.level(); err == nil {
				req.Ops, err = d.opList()
			}
		}
	case TypeSubmitWait:
		if err = d.openExact(2); err == nil {
			if req.Level, err = d.level(); err == nil {
				req.Op, err = d.op(-1)
			}
		}
	case TypeWait:
		var tx uint64
		if err = d.openExact(2); err == nil {
			if tx, err = d.field("tx"); err == nil {
				req.Tx = ledger.TxID(tx)
				req.Level, err = d.level()
			}
		}
	case TypeBalance, TypeLookup:
		if err = d.openExact(1); err == nil {
			req.Account, err = d.field("account")
		}
	case TypeStatus, TypeResult:
		var tx uint64
		if err = d.openExact(1); err == nil {
			tx, err = d.field("tx")
			req.Tx = ledger.TxID(tx)
		}
	case TypeHello:
		if err = d.openExact(1); err == nil {
			req.Token, err = d.token()
		}
	default:
		if !isReadType(t) {
			return fmt.Errorf("%w: %v", ErrUnknownType, t)
		}
		err = d.readRequest(t, &req.Read)
	}
	if err != nil {
		return err
	}
	return d.finish(0)
}

func (d *Decoder) opList() ([]ledger.Op, error) {
	c, _ := d.dec.PeekCode()
	if c == msgpcode.Nil {
		return nil, malformed("ops: nil, want an array")
	}
	n, err := d.arrayLen()
	if err != nil {
		return nil, fmt.Errorf("ops: %w", err)
	}
	if n > MaxOps {
		return nil, malformed("ops: %d above %d", n, MaxOps)
	}
	if n == 0 {
		return nil, nil // refused by the server as ledger.ErrBatchSize
	}
	if n > smallBatch {
		d.opArena = arenas.Get().(*opArena)
	}
	d.ops = d.ops[:0]
	d.deps, d.wds, d.trs = d.deps[:0], d.wds[:0], d.trs[:0]
	for i := range n {
		op, err := d.op(i)
		if err != nil {
			return nil, &ledger.InputError{Index: i, Err: err}
		}
		d.ops = append(d.ops, op)
	}
	return d.ops, nil
}

// op decodes op idx (-1: the single op of a submit_wait) from
// [kind, fields...]. In a batch (idx >= 0) simple ops point into the
// Decoder's buffers; otherwise they are values.
func (d *Decoder) op(idx int) (ledger.Op, error) {
	if c, err := d.dec.PeekCode(); err != nil || !(msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32) {
		what := "missing"
		if err == nil {
			what = codeName(c)
		}
		return nil, malformed("%s: %s, want an array [kind, fields...]", OpPath(idx), what)
	}
	n, err := d.arrayLen()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", OpPath(idx), err)
	}
	if n == 0 {
		return nil, FieldError(idx, 0, "kind", "missing")
	}
	k, p := d.uintOf()
	if p != "" {
		return nil, FieldError(idx, 0, "kind", "%s", p)
	}
	kind := ledger.Kind(k)
	if k > math.MaxUint8 || kind < ledger.KindDeposit || kind > ledger.KindCreateAccount {
		return nil, FieldError(idx, 0, "kind", "unknown kind %d", k)
	}
	fields := msgpackFields[kind]
	if kind == ledger.KindTransfer && n-1 >= len(transferLongFields) {
		fields = transferLongFields
	}
	hasLinked := n-1 == len(fields)+1 // the optional last element
	if n-1 != len(fields) && !hasLinked {
		if kind == ledger.KindTransfer {
			return nil, FieldError(idx, kind, "kind", "%d fields, want %d: %v, or %d: %v (and linked, optionally)",
				n-1, len(fields), msgpackFields[kind], len(transferLongFields), transferLongFields)
		}
		return nil, FieldError(idx, kind, "kind", "%d fields, want %d: %v (and linked, optionally)", n-1, len(fields), fields)
	}
	linked := func() (bool, error) {
		if !hasLinked {
			return false, nil
		}
		if c, err := d.dec.PeekCode(); err != nil || (c != msgpcode.True && c != msgpcode.False) {
			what := "missing"
			if err == nil {
				what = codeName(c)
			}
			return false, FieldError(idx, kind, "linked", "%s, want a boolean", what)
		}
		v, _ := d.dec.DecodeBool()
		return v, nil
	}
	var v [10]uint64
	if kind == ledger.KindComposite {
		for i := range 2 { // flags, user_ref; legs follow
			if v[i], p = d.uintOf(); p != "" {
				return nil, FieldError(idx, kind, fields[i], "%s", p)
			}
		}
		if v[0] > math.MaxUint8 {
			return nil, FieldError(idx, kind, "flags", "%d out of range", v[0])
		}
		legs, err := d.legs(idx)
		if err != nil {
			return nil, err
		}
		lk, err := linked()
		if err != nil {
			return nil, err
		}
		op := ledger.Composite{Legs: legs, Flags: ledger.CompositeFlags(v[0]), UserRef: v[1], Linked: lk}
		return op, CheckSystemAccount(idx, op)
	}
	for i := range fields {
		if v[i], p = d.uintOf(); p != "" {
			return nil, FieldError(idx, kind, fields[i], "%s", p)
		}
	}
	lk, err := linked()
	if err != nil {
		return nil, err
	}
	arena := idx >= 0
	switch kind {
	case ledger.KindCreateAccount:
		for i, max := range [...]uint64{1: math.MaxUint32, 2: math.MaxUint16, 3: math.MaxUint16} {
			if max != 0 && v[i] > max {
				return nil, FieldError(idx, kind, fields[i], "%d out of range", v[i])
			}
		}
		return ledger.CreateAccount{ID: v[0], Ledger: uint32(v[1]), Code: uint16(v[2]), Flags: ledger.AccountFlags(v[3]),
			UserData: [2]uint64{v[4], v[5]}, UserRef: v[6], Linked: lk}, nil
	case ledger.KindDeposit:
		o := ledger.Deposit{Account: v[0], Amount: v[1], UserRef: v[2], Linked: lk}
		if !arena {
			return o, nil
		}
		d.deps = append(d.deps, o)
		return &d.deps[len(d.deps)-1], nil
	case ledger.KindWithdrawal:
		o := ledger.Withdrawal{Account: v[0], Amount: v[1], UserRef: v[2], Linked: lk}
		if !arena {
			return o, nil
		}
		d.wds = append(d.wds, o)
		return &d.wds[len(d.wds)-1], nil
	default: // transfer
		for i, max := range [...]uint64{4: math.MaxUint32, 5: math.MaxUint16, 7: math.MaxUint16, 9: math.MaxUint32} {
			if max != 0 && v[i] > max {
				return nil, FieldError(idx, kind, fields[i], "%d out of range", v[i])
			}
		}
		o := ledger.Transfer{From: v[0], To: v[1], Amount: v[2], UserRef: v[3], Ledger: uint32(v[4]), Code: uint16(v[5]),
			UserData: v[6], Flags: ledger.TransferFlags(v[7]), PendingID: ledger.TxID(v[8]), Timeout: uint32(v[9]), Linked: lk}
		if err := checkTransfer(idx, &o); err != nil {
			return nil, err
		}
		if !arena {
			return o, nil
		}
		d.trs = append(d.trs, o)
		return &d.trs[len(d.trs)-1], nil
	}
}

// msgpackFields names the fields after the kind, in order.
var msgpackFields = [...][]string{
	ledger.KindDeposit:       {"account", "amount", "user_ref"},
	ledger.KindWithdrawal:    {"account", "amount", "user_ref"},
	ledger.KindTransfer:      {"from", "to", "amount", "user_ref"},
	ledger.KindComposite:     {"flags", "user_ref", "legs"},
	ledger.KindCreateAccount: {"id", "ledger", "code", "flags", "user_data_0", "user_data_1", "user_ref"},
}

// transferLongFields are a transfer's fields in the long form, which a
// transfer with any of the fields after user_ref takes (see
// Encoder.transfer).
var transferLongFields = []string{"from", "to", "amount", "user_ref", "ledger", "code", "user_data", "flags", "pending_id", "timeout"}

// legs decodes a composite's [[account, delta]...]. They are freshly
// allocated: the ledger keeps them.
func (d *Decoder) legs(idx int) ([]ledger.Leg, error) {
	const kind = ledger.KindComposite
	c, err := d.dec.PeekCode()
	if err != nil || !(msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32) {
		what := "missing"
		if err == nil {
			what = codeName(c)
		}
		return nil, FieldError(idx, kind, "legs", "%s, want an array", what)
	}
	n, err := d.arrayLen()
	if err != nil {
		return nil, FieldError(idx, kind, "legs", "%v", err)
	}
	legs := make([]ledger.Leg, n)
	for i := range legs {
		c, err := d.dec.PeekCode()
		if err != nil || !msgpcode.IsFixedArray(c) {
			what := "missing"
			if err == nil {
				what = codeName(c)
			}
			return nil, FieldError(idx, kind, fmt.Sprintf("legs[%d]", i), "%s, want [account, delta]", what)
		}
		if m, _ := d.dec.DecodeArrayLen(); m != 2 {
			return nil, FieldError(idx, kind, fmt.Sprintf("legs[%d]", i), "%d fields, want 2: [account delta]", m)
		}
		var p string
		if legs[i].Account, p = d.uintOf(); p != "" {
			return nil, FieldError(idx, kind, fmt.Sprintf("legs[%d].account", i), "%s", p)
		}
		if legs[i].Delta, p = d.intOf(); p != "" {
			return nil, FieldError(idx, kind, fmt.Sprintf("legs[%d].delta", i), "%s", p)
		}
	}
	return legs, nil
}

// Empty decodes a body that carries no fields (Pong, Waited).
func (d *Decoder) Empty(body []byte) error {
	d.reset(body)
	extra, err := d.open(0)
	if err != nil {
		return err
	}
	return d.finish(extra)
}

// Submitted decodes a TypeSubmitted body.
func (d *Decoder) Submitted(body []byte) (first, last ledger.TxID, err error) {
	d.reset(body)
	extra, err := d.open(2)
	if err != nil {
		return 0, 0, err
	}
	var f, l uint64
	if err := d.uints(&f, &l); err != nil {
		return 0, 0, err
	}
	return ledger.TxID(f), ledger.TxID(l), d.finish(extra)
}

// SubmittedResults decodes a TypeSubmitted body with its per-op results
// (nil if the server sent none: a batch answered at Sequenced).
func (d *Decoder) SubmittedResults(body []byte) (first, last ledger.TxID, res []ledger.Result, err error) {
	d.reset(body)
	extra, err := d.open(2)
	if err != nil {
		return 0, 0, nil, err
	}
	var f, l uint64
	if err := d.uints(&f, &l); err != nil {
		return 0, 0, nil, err
	}
	if extra > 0 {
		extra--
		n, err := d.arrayLen()
		if err != nil {
			return 0, 0, nil, err
		}
		if n > MaxOps {
			return 0, 0, nil, malformed("results: %d above %d", n, MaxOps)
		}
		res = make([]ledger.Result, n)
		for i := range res {
			m, err := d.arrayLen()
			if err != nil {
				return 0, 0, nil, err
			}
			if m < 7 {
				return 0, 0, nil, malformed("result has %d fields, want 7", m)
			}
			if res[i], err = d.result(m - 7); err != nil {
				return 0, 0, nil, err
			}
		}
	}
	return ledger.TxID(f), ledger.TxID(l), res, d.finish(extra)
}

// ResultIs decodes a TypeResultIs body.
func (d *Decoder) ResultIs(body []byte) (ledger.Result, error) {
	d.reset(body)
	extra, err := d.open(7) // the account, 8th, came with created accounts
	if err != nil {
		return ledger.Result{}, err
	}
	r, err := d.result(extra)
	if err != nil {
		return r, err
	}
	return r, d.finish(0)
}

// result decodes the fields of a result after its array header: 7, and
// extra more (the first of them the account).
func (d *Decoder) result(extra int) (ledger.Result, error) {
	var r ledger.Result
	var err error
	var id, kind, fail, dup uint64
	if err := d.uints(&id, &kind, &fail, &r.UserRef, &dup); err != nil {
		return r, err
	}
	if kind > math.MaxUint8 || fail > math.MaxUint8 {
		return r, malformed("result kind %d fail %d", kind, fail)
	}
	r.ID, r.Kind, r.Fail, r.DupOf = ledger.TxID(id), ledger.Kind(kind), ledger.FailReason(fail), ledger.TxID(dup)
	if r.Timestamp, err = d.i(); err != nil {
		return r, err
	}
	n, err := d.arrayLen()
	if err != nil {
		return r, err
	}
	if n > 0 {
		r.Entries = make([]ledger.Entry, n)
	}
	for i := range r.Entries {
		m, err := d.arrayLen()
		if err != nil {
			return r, err
		}
		if m < 4 {
			return r, malformed("entry has %d fields, want 4", m)
		}
		en := &r.Entries[i]
		var col uint64
		if err := d.uints(&en.Account, &col); err != nil {
			return r, err
		}
		if col > math.MaxUint8 {
			return r, malformed("entry column %d", col)
		}
		en.Column = ledger.Column(col)
		if en.Delta, err = d.i(); err != nil {
			return r, err
		}
		if en.Value, err = d.i(); err != nil {
			return r, err
		}
		if err := d.finishOp(m - 4); err != nil {
			return r, err
		}
	}
	if extra == 0 {
		return r, nil
	}
	extra--
	if err := d.resultAccount(&r); err != nil {
		return r, err
	}
	if extra == 0 {
		return r, nil
	}
	extra--
	if err := d.resultTransfer(&r); err != nil {
		return r, err
	}
	if extra == 0 {
		return r, nil
	}
	extra--
	n, err = d.arrayLen()
	if err != nil {
		return r, err
	}
	if n > 0 {
		r.Expired = make([]ledger.TxID, n)
	}
	for i := range r.Expired {
		v, err := d.u()
		if err != nil {
			return r, err
		}
		r.Expired[i] = ledger.TxID(v)
	}
	return r, d.finishOp(extra)
}

// resultAccount decodes a result's account element: nil, or a
// create_account's account.
func (d *Decoder) resultAccount(r *ledger.Result) error {
	if c, _ := d.dec.PeekCode(); c == msgpcode.Nil {
		return d.dec.Skip()
	}
	m, err := d.arrayLen()
	if err != nil {
		return err
	}
	if m < 6 {
		return malformed("account has %d fields, want 6", m)
	}
	var v [6]uint64
	if err := d.uints(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5]); err != nil {
		return err
	}
	if v[1] > math.MaxUint32 || v[2] > math.MaxUint16 || v[3] > math.MaxUint16 {
		return malformed("account ledger %d code %d flags %d", v[1], v[2], v[3])
	}
	r.Account = &ledger.Account{ID: v[0], Ledger: uint32(v[1]), Code: uint16(v[2]), Flags: ledger.AccountFlags(v[3]), UserData: [2]uint64{v[4], v[5]}}
	return d.finishOp(m - 6)
}

// resultTransfer decodes a result's transfer element: nil, or a transfer's
// fields.
func (d *Decoder) resultTransfer(r *ledger.Result) error {
	if c, _ := d.dec.PeekCode(); c == msgpcode.Nil {
		return d.dec.Skip()
	}
	m, err := d.arrayLen()
	if err != nil {
		return err
	}
	if m < 6 {
		return malformed("transfer has %d fields, want 6", m)
	}
	var v [6]uint64
	if err := d.uints(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5]); err != nil {
		return err
	}
	if v[0] > math.MaxUint32 || v[1] > math.MaxUint16 || v[2] > math.MaxUint16 || v[5] > math.MaxUint32 {
		return malformed("transfer ledger %d code %d flags %d timeout %d", v[0], v[1], v[2], v[5])
	}
	r.Ledger, r.Code, r.Flags, r.UserData, r.PendingID, r.Timeout =
		uint32(v[0]), uint16(v[1]), ledger.TransferFlags(v[2]), v[3], ledger.TxID(v[4]), uint32(v[5])
	return d.finishOp(m - 6)
}

// AccountIs decodes a TypeAccountIs body.
func (d *Decoder) AccountIs(body []byte) (ledger.Account, error) {
	d.reset(body)
	var a ledger.Account
	extra, err := d.open(10)
	if err != nil {
		return a, err
	}
	var lg, code, flags uint64
	if err := d.uints(&a.ID, &lg, &code, &flags, &a.UserData[0], &a.UserData[1],
		&a.DebitsPosted, &a.CreditsPosted, &a.DebitsPending, &a.CreditsPending); err != nil {
		return a, err
	}
	if lg > math.MaxUint32 || code > math.MaxUint16 || flags > math.MaxUint16 {
		return a, malformed("account ledger %d code %d flags %d", lg, code, flags)
	}
	a.Ledger, a.Code, a.Flags = uint32(lg), uint16(code), ledger.AccountFlags(flags)
	return a, d.finish(extra)
}

// BalanceIs decodes a TypeBalanceIs body.
func (d *Decoder) BalanceIs(body []byte) (int64, error) {
	d.reset(body)
	extra, err := d.open(1)
	if err != nil {
		return 0, err
	}
	b, err := d.i()
	if err != nil {
		return 0, err
	}
	return b, d.finish(extra)
}

// StatusIs decodes a TypeStatusIs body.
func (d *Decoder) StatusIs(body []byte) (ledger.Level, error) {
	d.reset(body)
	extra, err := d.open(1)
	if err != nil {
		return 0, err
	}
	l, err := d.level()
	if err != nil {
		return 0, err
	}
	return l, d.finish(extra)
}

// IndexesAre decodes a TypeIndexesAre body.
func (d *Decoder) IndexesAre(body []byte) (ledger.Indexes, error) {
	d.reset(body)
	var x ledger.Indexes
	extra, err := d.open(4)
	if err != nil {
		return x, err
	}
	var s, c, m, p uint64
	if err := d.uints(&s, &c, &m, &p); err != nil {
		return x, err
	}
	x = ledger.Indexes{Sequenced: ledger.TxID(s), Computed: ledger.TxID(c), Committed: ledger.TxID(m), Snapshot: ledger.TxID(p)}
	return x, d.finish(extra)
}

// SnapshotTaken decodes a TypeSnapshotTaken body.
func (d *Decoder) SnapshotTaken(body []byte) (ledger.TxID, error) {
	d.reset(body)
	extra, err := d.open(1)
	if err != nil {
		return 0, err
	}
	var tx uint64
	if err := d.uints(&tx); err != nil {
		return 0, err
	}
	return ledger.TxID(tx), d.finish(extra)
}

// Welcome decodes a TypeWelcome body: the scope the token grants.
func (d *Decoder) Welcome(body []byte) (string, error) {
	d.reset(body)
	extra, err := d.open(1)
	if err != nil {
		return "", err
	}
	s, err := d.dec.DecodeString()
	if err != nil {
		return "", malformed("scope: %v", err)
	}
	return s, d.finish(extra)
}

// Error decodes a TypeError body.
func (d *Decoder) Error(body []byte) (*Error, error) {
	d.reset(body)
	extra, err := d.open(3)
	if err != nil {
		return nil, err
	}
	code, err := d.u()
	if err != nil {
		return nil, err
	}
	idx, err := d.i()
	if err != nil {
		return nil, err
	}
	msg, err := d.dec.DecodeString()
	if err != nil {
		return nil, malformed("%v", err)
	}
	if code > math.MaxUint16 || idx < 0 || idx > MaxOps {
		return nil, malformed("error code %d index %d", code, idx)
	}
	return &Error{Code: Code(code), Index: int(idx), Message: truncate(msg)}, d.finish(extra)
}
