package wire

import (
	"bytes"
	"fmt"
	"math"

	"github.com/lanework/lanework/ledger"
	"github.com/vmihailenco/msgpack/v5"
)

// Request is a decoded request body. Which fields are set depends on the
// type: Submit (Level, Ops), SubmitWait (Level, Op), Wait (Tx, Level),
// Balance (Account), Status and Result (Tx); Ping, Indexes and Snapshot
// have none.
type Request struct {
	Level   ledger.Level
	Ops     []ledger.Op // valid until the Decoder's next call; see Decoder
	Op      ledger.Op   // owned by the caller
	Tx      ledger.TxID
	Account uint64
}

// Decoder decodes message bodies. It is not safe for concurrent use. To
// decode a batch without allocating per op, the Deposit, Withdrawal and
// Transfer ops of Request.Ops point into buffers the Decoder reuses on its
// next call; copy them (ledger.SubmitBatch does) before then. Composite
// legs are always freshly allocated, because the ledger keeps them.
type Decoder struct {
	r   bytes.Reader
	dec *msgpack.Decoder

	ops  []ledger.Op
	deps []ledger.Deposit
	wds  []ledger.Withdrawal
	trs  []ledger.Transfer
}

// NewDecoder returns a Decoder.
func NewDecoder() *Decoder {
	d := &Decoder{}
	d.dec = msgpack.NewDecoder(&d.r)
	return d
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

func (d *Decoder) reset(body []byte) {
	d.r.Reset(body)
	d.dec.ResetReader(&d.r)
}

// open reads the body's array header and checks it has at least min
// fields; it returns the number of extra fields, which finish skips.
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

func (d *Decoder) u() (uint64, error) {
	v, err := d.dec.DecodeUint64()
	if err != nil {
		return 0, malformed("%v", err)
	}
	return v, nil
}

func (d *Decoder) i() (int64, error) {
	v, err := d.dec.DecodeInt64()
	if err != nil {
		return 0, malformed("%v", err)
	}
	return v, nil
}

func (d *Decoder) level() (ledger.Level, error) {
	v, err := d.u()
	if err != nil {
		return 0, err
	}
	if v > math.MaxUint8 {
		return 0, malformed("level %d", v)
	}
	return ledger.Level(v), nil
}

// uints reads n unsigned fields into dst.
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

// Request decodes the body of a request of type t into req (which it
// resets). It fails with an error wrapping ErrMalformed, or ErrUnknownType.
func (d *Decoder) Request(t Type, body []byte, req *Request) error {
	d.reset(body)
	*req = Request{}
	var extra int
	var err error
	switch t {
	case TypePing, TypeIndexes, TypeSnapshot:
		extra, err = d.open(0)
	case TypeSubmit:
		if extra, err = d.open(2); err == nil {
			if req.Level, err = d.level(); err == nil {
				req.Ops, err = d.opList()
			}
		}
	case TypeSubmitWait:
		if extra, err = d.open(2); err == nil {
			if req.Level, err = d.level(); err == nil {
				req.Op, err = d.op(false)
			}
		}
	case TypeWait:
		var tx uint64
		if extra, err = d.open(2); err == nil {
			if err = d.uints(&tx); err == nil {
				req.Tx = ledger.TxID(tx)
				req.Level, err = d.level()
			}
		}
	case TypeBalance:
		if extra, err = d.open(1); err == nil {
			err = d.uints(&req.Account)
		}
	case TypeStatus, TypeResult:
		var tx uint64
		if extra, err = d.open(1); err == nil {
			err = d.uints(&tx)
			req.Tx = ledger.TxID(tx)
		}
	default:
		return fmt.Errorf("%w: %v", ErrUnknownType, t)
	}
	if err != nil {
		return err
	}
	return d.finish(extra)
}

func (d *Decoder) opList() ([]ledger.Op, error) {
	n, err := d.arrayLen()
	if err != nil {
		return nil, err
	}
	if n > MaxOps {
		return nil, malformed("%d ops above %d", n, MaxOps)
	}
	d.ops = d.ops[:0]
	d.deps, d.wds, d.trs = d.deps[:0], d.wds[:0], d.trs[:0]
	for range n {
		op, err := d.op(true)
		if err != nil {
			return nil, err
		}
		d.ops = append(d.ops, op)
	}
	return d.ops, nil
}

// op decodes [kind, ...]. With arena, simple ops point into the Decoder's
// buffers; otherwise they are values. A msgpack nil decodes as a nil Op.
func (d *Decoder) op(arena bool) (ledger.Op, error) {
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return nil, malformed("op: %v", err)
	}
	if n < 0 {
		return nil, nil
	}
	if n == 0 {
		return nil, malformed("op: empty")
	}
	k, err := d.u()
	if err != nil {
		return nil, err
	}
	want := 4
	if ledger.Kind(k) == ledger.KindTransfer {
		want = 5
	}
	if n < want {
		return nil, malformed("op %v has %d fields, want %d", ledger.Kind(k), n, want)
	}
	var op ledger.Op
	switch ledger.Kind(k) {
	case ledger.KindDeposit:
		var o ledger.Deposit
		err = d.uints(&o.Account, &o.Amount, &o.UserRef)
		if arena {
			d.deps = append(d.deps, o)
			op = &d.deps[len(d.deps)-1]
		} else {
			op = o
		}
	case ledger.KindWithdrawal:
		var o ledger.Withdrawal
		err = d.uints(&o.Account, &o.Amount, &o.UserRef)
		if arena {
			d.wds = append(d.wds, o)
			op = &d.wds[len(d.wds)-1]
		} else {
			op = o
		}
	case ledger.KindTransfer:
		var o ledger.Transfer
		err = d.uints(&o.From, &o.To, &o.Amount, &o.UserRef)
		if arena {
			d.trs = append(d.trs, o)
			op = &d.trs[len(d.trs)-1]
		} else {
			op = o
		}
	case ledger.KindComposite:
		op, err = d.composite()
	default:
		return nil, malformed("op kind %d", k)
	}
	if err != nil {
		return nil, err
	}
	return op, d.finishOp(n - want)
}

func (d *Decoder) finishOp(extra int) error {
	for ; extra > 0; extra-- {
		if err := d.dec.Skip(); err != nil {
			return malformed("%v", err)
		}
	}
	return nil
}

func (d *Decoder) composite() (ledger.Op, error) {
	var flags, ref uint64
	if err := d.uints(&flags, &ref); err != nil {
		return nil, err
	}
	if flags > math.MaxUint8 {
		return nil, malformed("composite flags %d", flags)
	}
	n, err := d.arrayLen()
	if err != nil {
		return nil, err
	}
	legs := make([]ledger.Leg, n)
	for i := range legs {
		m, err := d.arrayLen()
		if err != nil {
			return nil, err
		}
		if m < 2 {
			return nil, malformed("leg has %d fields, want 2", m)
		}
		if legs[i].Account, err = d.u(); err != nil {
			return nil, err
		}
		if legs[i].Delta, err = d.i(); err != nil {
			return nil, err
		}
		if err := d.finishOp(m - 2); err != nil {
			return nil, err
		}
	}
	return ledger.Composite{Legs: legs, Flags: ledger.CompositeFlags(flags), UserRef: ref}, nil
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

// ResultIs decodes a TypeResultIs body.
func (d *Decoder) ResultIs(body []byte) (ledger.Result, error) {
	d.reset(body)
	var r ledger.Result
	extra, err := d.open(7)
	if err != nil {
		return r, err
	}
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
		if m < 3 {
			return r, malformed("entry has %d fields, want 3", m)
		}
		en := &r.Entries[i]
		if en.Account, err = d.u(); err != nil {
			return r, err
		}
		if en.Delta, err = d.i(); err != nil {
			return r, err
		}
		if en.Balance, err = d.i(); err != nil {
			return r, err
		}
		if err := d.finishOp(m - 3); err != nil {
			return r, err
		}
	}
	return r, d.finish(extra)
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
