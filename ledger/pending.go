package ledger

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync/atomic"
)

// Two-phase transfers. A Pending transfer holds its amount in the pending
// columns (debits_pending of the debit account, credits_pending of the
// credit account) and enters the pending book under its TxID; a post (of
// the whole amount or less) or a void names that TxID, releases the hold
// and, for a post, moves the amount posted to the posted columns. A
// pending transfer with a Timeout expires at its timestamp plus Timeout
// seconds, by the Transactor's transaction timestamps: a post or void at or
// after that instant fails with PendingTransferExpired, and the hold is
// released by the expiry scan.
//
// The expiry scan runs before each transaction the Transactor executes
// (before a linked chain's first member, never inside a chain): it
// releases up to maxExpiryPerTx pending transfers whose expiry is at or
// before the transaction's timestamp, in (expiry, id) order, and the
// record of that transaction carries them (their ids and release entries,
// before its own entries). So an expiry is journaled like everything else,
// the WAL, the Snapshotter and recovery apply its entries, and a replay
// reproduces it exactly; a ledger that executes nothing releases nothing
// (an expired hold stays in the columns until the next transaction, which
// sees it released). Pending transfers that expire while the ledger is
// down are released by the first transaction after Open.
//
// The book remembers a resolved (posted, voided, expired) pending transfer
// as long as an idempotency key (DedupRetention by timestamps, and
// DedupRetentionTxs; the DedupWindow with DedupRetention < 0), so that a
// second post or void fails with its own reason; after that it fails with
// PendingTransferNotFound. Nothing is moved twice either way.
//
// Three copies of the book exist: the Transactor's (ahead, the one checks
// use), the Snapshotter's (as of the Snapshot index: a snapshot encodes it
// as of its S0) and, during recovery, the one the replay rebuilds. The
// Transactor changes its book as it executes; the other two apply the
// records (applyOp), which carry everything they need.

// maxExpiryPerTx bounds the expired pending transfers one transaction's
// record releases: its overlay slots (two per expiry) and its encoded size
// stay bounded.
const maxExpiryPerTx = 32

type pendingState uint8

const (
	pendingOpen pendingState = iota + 1
	pendingPosted
	pendingVoided
	pendingExpired
)

// pendingXfer is an open pending transfer in the book.
type pendingXfer struct {
	id            uint64 // its TxID
	debit, credit uint64 // account ids
	dslot, cslot  uint64
	amount        uint64
	expires       int64 // Unix ns; 0: never
	userData      uint64
	ledger        uint32
	code          uint16
	flags         TransferFlags
}

// fate is what the book keeps of a resolved pending transfer: how and
// when it was resolved.
type fate struct {
	ts    int64  // the resolving transaction's timestamp
	by    uint64 // the resolving transaction
	state pendingState
}

// expiry is an open pending transfer's place in the expiry heap.
type expiry struct {
	at int64
	id uint64
}

type expiryHeap []expiry

func (h expiryHeap) Len() int { return len(h) }
func (h expiryHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].id < h[j].id
}
func (h expiryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)   { *h = append(*h, x.(expiry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// fateRetention says how long a resolved pending transfer is remembered:
// age in ns of timestamps (0: no age limit), txs in ids (0: no id limit).
type fateRetention struct {
	age int64
	txs uint64
}

func fateRetentionOf(cfg *Config) fateRetention {
	var k fateRetention
	if cfg.DedupRetention > 0 {
		k.age = int64(cfg.DedupRetention)
		k.txs = uint64(max(cfg.DedupRetentionTxs, 0))
	} else {
		k.txs = cfg.DedupWindow
	}
	return k
}

// pendingBook is the set of pending transfers: open ones, and the fates
// of resolved ones within the retention. Go maps: inserts and deletes
// balance in a steady state, so they stop growing. An open pending
// transfer costs about 100 bytes with the map's overhead (plus 16 in the
// expiry heap if it has a timeout), a resolved one about 40.
type pendingBook struct {
	m     map[uint64]pendingXfer // open
	done  map[uint64]fate        // resolved
	exp   expiryHeap             // open pending transfers with a timeout; resolved ones are skipped lazily
	fates []uint64               // resolved ids in resolution order (FIFO from head)
	head  int
	// closed maps the slot of each account a closing transfer closed to
	// that transfer's id: open while it is pending, for good once posted.
	closed map[uint64]uint64
	keep   fateRetention
}

func newPendingBook(keep fateRetention) *pendingBook {
	return &pendingBook{m: map[uint64]pendingXfer{}, done: map[uint64]fate{}, closed: map[uint64]uint64{}, keep: keep}
}

// nextExpiry is the earliest expiry of an open pending transfer, or
// MaxInt64.
func (b *pendingBook) nextExpiry() int64 {
	for len(b.exp) > 0 {
		top := b.exp[0]
		if p, ok := b.m[top.id]; ok && p.expires == top.at {
			return top.at
		}
		heap.Pop(&b.exp)
	}
	return math.MaxInt64
}

// add enters the open pending transfer p; a closing one closes its
// accounts (the caller sets their Closed bits).
func (b *pendingBook) add(p pendingXfer) {
	b.m[p.id] = p
	if p.expires != 0 {
		heap.Push(&b.exp, expiry{at: p.expires, id: p.id})
	}
	if p.flags&ClosingDebit != 0 {
		b.closed[p.dslot] = p.id
	}
	if p.flags&ClosingCredit != 0 {
		b.closed[p.cslot] = p.id
	}
}

// resolve marks the open pending transfer id posted, voided or expired by
// transaction txid at ts and returns it. A void or expiry of a closing
// transfer reopens its accounts (the caller clears their Closed bits).
func (b *pendingBook) resolve(id uint64, st pendingState, ts int64, txid uint64) (pendingXfer, bool) {
	p, ok := b.m[id]
	if !ok {
		return p, false
	}
	delete(b.m, id)
	b.done[id] = fate{ts: ts, by: txid, state: st}
	b.fates = append(b.fates, id)
	if st != pendingPosted {
		for _, s := range p.closes() {
			if b.closed[s] == id {
				delete(b.closed, s)
			}
		}
	}
	return p, true
}

// closes returns the slots a closing transfer closes.
func (p *pendingXfer) closes() []uint64 {
	var s []uint64
	if p.flags&ClosingDebit != 0 {
		s = append(s, p.dslot)
	}
	if p.flags&ClosingCredit != 0 {
		s = append(s, p.cslot)
	}
	return s
}

// prune forgets the resolved pending transfers past the retention as of
// transaction id at ts.
func (b *pendingBook) prune(id uint64, ts int64) {
	for b.head < len(b.fates) {
		fid := b.fates[b.head]
		if f, ok := b.done[fid]; ok {
			if !(b.keep.age > 0 && ts-f.ts > b.keep.age) && !(b.keep.txs > 0 && id-f.by > b.keep.txs) {
				break
			}
			delete(b.done, fid)
		}
		b.head++
	}
	if b.head == len(b.fates) || b.head > 1024 && b.head > len(b.fates)/2 {
		b.fates = append(b.fates[:0], b.fates[b.head:]...)
		b.head = 0
	}
}

// unresolve undoes resolve of p (a linked chain rolled back).
func (b *pendingBook) unresolve(p pendingXfer) {
	delete(b.done, p.id)
	b.m[p.id] = p
	for i := len(b.fates) - 1; i >= b.head; i-- {
		if b.fates[i] == p.id {
			b.fates = slices.Delete(b.fates, i, i+1)
			break
		}
	}
	for _, s := range p.closes() {
		b.closed[s] = p.id
	}
	// Its heap entry was never removed: nextExpiry finds it open again.
}

// unadd undoes add (a linked chain rolled back).
func (b *pendingBook) unadd(p pendingXfer) {
	delete(b.m, p.id)
	for _, s := range p.closes() {
		if b.closed[s] == p.id {
			delete(b.closed, s)
		}
	}
}

// sums returns, per slot, the open pending amounts it is debited and
// credited (verify and the recovery check compare them with the columns).
func (b *pendingBook) sums() map[uint64][2]uint64 {
	out := map[uint64][2]uint64{}
	for _, p := range b.m {
		d := out[p.dslot]
		d[0] += p.amount
		out[p.dslot] = d
		c := out[p.cslot]
		c[1] += p.amount
		out[p.cslot] = c
	}
	return out
}

// bookOp is what applying a journaled transaction does to a book: the
// pending transfers its record releases by expiry, and, if it applied, the
// pending transfer it opens or the one it posts or voids.
type bookOp struct {
	id      uint64
	ts      int64
	expired []uint64
	ok      bool
	xfer    xferFields
	// The pending transfer a Pending record opens: from its entries.
	debit, credit uint64
	dslot, cslot  uint64
	amount        uint64
}

// applyOp applies op to the book (the Snapshotter's copy and recovery's)
// and calls setClosed for every account whose closed state it changes.
func (b *pendingBook) applyOp(op *bookOp, setClosed func(slot uint64, closed bool)) error {
	for _, id := range op.expired {
		p, ok := b.resolve(id, pendingExpired, op.ts, op.id)
		if !ok {
			return fmt.Errorf("tx %d expires pending transfer %d, which is not open", op.id, id)
		}
		for _, s := range p.closes() {
			setClosed(s, false)
		}
	}
	f := op.xfer.flags
	if op.ok && f&Pending != 0 {
		p := pendingXfer{id: op.id, debit: op.debit, credit: op.credit, dslot: op.dslot, cslot: op.cslot, amount: op.amount,
			userData: op.xfer.userData, ledger: op.xfer.ledger, code: op.xfer.code, flags: f}
		if op.xfer.timeout != 0 {
			p.expires = op.ts + int64(op.xfer.timeout)*1e9
		}
		b.add(p)
		for _, s := range p.closes() {
			setClosed(s, true)
		}
	}
	if op.ok && f&resolving != 0 {
		st := pendingPosted
		if f&VoidPendingTransfer != 0 {
			st = pendingVoided
		}
		p, ok := b.resolve(op.xfer.pendingID, st, op.ts, op.id)
		if !ok {
			return fmt.Errorf("tx %d resolves pending transfer %d, which is not open", op.id, op.xfer.pendingID)
		}
		if st == pendingVoided {
			for _, s := range p.closes() {
				setClosed(s, false)
			}
		}
	}
	b.prune(op.id, op.ts)
	return nil
}

// recordOp is the bookOp of a ring record; false if it changes no book.
func (r *txRecord) bookOp(op *bookOp) bool {
	exp := r.extra != nil && len(r.extra.expired) > 0
	if !exp && !(r.hasTransfer() && r.tflags&(Pending|resolving) != 0) {
		return false
	}
	*op = bookOp{id: r.id, ts: r.ts, ok: r.fail == OK}
	if exp {
		op.expired = r.extra.expired
	}
	if r.hasTransfer() {
		op.xfer = xferFields{ledger: r.ledger, code: r.code, flags: r.tflags, userData: r.userData, pendingID: r.pendingID(), timeout: r.timeout}
		if op.ok && r.tflags&Pending != 0 {
			es := r.entries()
			op.debit, op.credit = es[0].acct, es[1].acct
			op.dslot, op.cslot = uint64(es[0].cell)/cellsPerAccount, uint64(es[1].cell)/cellsPerAccount
			op.amount = uint64(es[0].delta)
		}
	}
	return true
}

// bookOp is the bookOp of a decoded WAL transaction whose entries are in
// cells (recovery's); false if it changes no book.
func (t *walTx) bookOp(op *bookOp, cells []uint64) bool {
	f := t.xfer.flags
	if t.nexp == 0 && f&(Pending|resolving) == 0 {
		return false
	}
	*op = bookOp{id: t.id, ts: t.ts, ok: t.fail == OK, xfer: t.xfer}
	for i := 0; i < t.nexp/2; i++ {
		op.expired = append(op.expired, t.expired(i))
	}
	if op.ok && f&Pending != 0 {
		d, c := t.entry(t.nexp), t.entry(t.nexp+1)
		op.debit, op.credit = d.Account, c.Account
		op.dslot, op.cslot = cells[t.nexp]/cellsPerAccount, cells[t.nexp+1]/cellsPerAccount
		op.amount = uint64(d.Delta)
	}
	return true
}

// Snapshot encoding of a book (sealed like every record), little-endian:
//
//	u32 n, n x open { u64 id, u64 debit, u64 credit, u64 debit slot,
//	  u64 credit slot, u64 amount, i64 expires, u64 user_data, u32 ledger,
//	  u16 code, u16 flags }
//	u32 n, n x resolved { u64 id, u8 state, i64 ts, u64 by }, in resolution order
//	u32 n, n x closed { u64 slot, u64 closing transfer id }
const (
	openRecLen = 8*8 + 4 + 2 + 2
	fateRecLen = 8 + 1 + 8 + 8
)

func (b *pendingBook) encode() []byte {
	ids := make([]uint64, 0, len(b.m))
	for id := range b.m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	dst := make([]byte, 0, 12+len(ids)*openRecLen+len(b.done)*fateRecLen+len(b.closed)*16)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(ids)))
	for _, id := range ids {
		p := b.m[id]
		for _, v := range [...]uint64{p.id, p.debit, p.credit, p.dslot, p.cslot, p.amount, uint64(p.expires), p.userData} {
			dst = binary.LittleEndian.AppendUint64(dst, v)
		}
		dst = binary.LittleEndian.AppendUint32(dst, p.ledger)
		dst = binary.LittleEndian.AppendUint16(dst, p.code)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(p.flags))
	}
	n := 0
	for _, id := range b.fates[b.head:] {
		if _, ok := b.done[id]; ok {
			n++
		}
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	for _, id := range b.fates[b.head:] {
		f, ok := b.done[id]
		if !ok {
			continue
		}
		dst = binary.LittleEndian.AppendUint64(dst, id)
		dst = append(dst, byte(f.state))
		dst = binary.LittleEndian.AppendUint64(dst, uint64(f.ts))
		dst = binary.LittleEndian.AppendUint64(dst, f.by)
	}
	slots := make([]uint64, 0, len(b.closed))
	for s := range b.closed {
		slots = append(slots, s)
	}
	slices.Sort(slots)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(slots)))
	for _, s := range slots {
		dst = binary.LittleEndian.AppendUint64(dst, s)
		dst = binary.LittleEndian.AppendUint64(dst, b.closed[s])
	}
	return sealRecord(dst)
}

var errBook = errors.New("bad pending book")

// decodePendingBook decodes a snapshot's book; maxSlot bounds its slots,
// maxID its ids. It never panics on arbitrary input.
func decodePendingBook(val []byte, keep fateRetention, maxSlot, maxID uint64) (*pendingBook, error) {
	d, err := openRecord(val)
	if err != nil {
		return nil, err
	}
	b := newPendingBook(keep)
	count := func(recLen uint64) (uint64, error) {
		if len(d) < 4 {
			return 0, fmt.Errorf("%w: truncated", errBook)
		}
		n := uint64(binary.LittleEndian.Uint32(d))
		d = d[4:]
		if uint64(len(d)) < n*recLen {
			return 0, fmt.Errorf("%w: %d records in %d bytes", errBook, n, len(d))
		}
		return n, nil
	}
	n, err := count(openRecLen)
	if err != nil {
		return nil, err
	}
	for range n {
		var v [8]uint64
		for i := range v {
			v[i] = binary.LittleEndian.Uint64(d[8*i:])
		}
		p := pendingXfer{id: v[0], debit: v[1], credit: v[2], dslot: v[3], cslot: v[4], amount: v[5], expires: int64(v[6]), userData: v[7],
			ledger: binary.LittleEndian.Uint32(d[64:]), code: binary.LittleEndian.Uint16(d[68:]), flags: TransferFlags(binary.LittleEndian.Uint16(d[70:]))}
		d = d[openRecLen:]
		if _, dup := b.m[p.id]; dup || p.id == 0 || p.id > maxID || p.dslot >= maxSlot || p.cslot >= maxSlot || p.amount > maxColumn ||
			p.flags&Pending == 0 || !p.flags.valid() {
			return nil, fmt.Errorf("%w: pending transfer %d", errBook, p.id)
		}
		b.add(p)
	}
	if n, err = count(fateRecLen); err != nil {
		return nil, err
	}
	for range n {
		id, f := binary.LittleEndian.Uint64(d), fate{state: pendingState(d[8]), ts: int64(binary.LittleEndian.Uint64(d[9:])), by: binary.LittleEndian.Uint64(d[17:])}
		d = d[fateRecLen:]
		_, open := b.m[id]
		_, dup := b.done[id]
		if open || dup || id == 0 || id > maxID || f.by > maxID || f.state < pendingPosted || f.state > pendingExpired {
			return nil, fmt.Errorf("%w: resolved pending transfer %d", errBook, id)
		}
		b.done[id] = f
		b.fates = append(b.fates, id)
	}
	clear(b.closed) // as the snapshot says
	if n, err = count(16); err != nil {
		return nil, err
	}
	if uint64(len(d)) != n*16 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errBook, uint64(len(d))-n*16)
	}
	for i := range n {
		s, id := binary.LittleEndian.Uint64(d[16*i:]), binary.LittleEndian.Uint64(d[16*i+8:])
		if s == 0 || s >= maxSlot || id == 0 || id > maxID {
			return nil, fmt.Errorf("%w: closed account slot %d", errBook, s)
		}
		b.closed[s] = id
	}
	return b, nil
}

// clone returns a copy of b (the Snapshotter's, from recovery's).
func (b *pendingBook) clone() *pendingBook {
	c := newPendingBook(b.keep)
	maps.Copy(c.m, b.m)
	maps.Copy(c.done, b.done)
	maps.Copy(c.closed, b.closed)
	c.exp = slices.Clone(b.exp)
	c.fates = slices.Clone(b.fates[b.head:])
	return c
}

// closedBits is the readable closed state of accounts closed by a closing
// transfer (one bit per slot), which Lookup reports; its writer is the
// Snapshotter (and recovery before the stages start).
type closedBits []atomic.Uint64

func newClosedBits(maxAccounts uint64) closedBits { return make(closedBits, (maxAccounts+63)/64) }

func (c closedBits) set(s uint64, on bool) {
	w := &c[s/64]
	if on {
		w.Or(1 << (s % 64))
	} else {
		w.And(^(uint64(1) << (s % 64)))
	}
}

func (c closedBits) get(s uint64) bool { return c[s/64].Load()&(1<<(s%64)) != 0 }
