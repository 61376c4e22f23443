package ledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"unsafe"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// WAL batch value layout, little-endian:
//
//	[0:4]   CRC32C (Castagnoli) of bytes [4:]
//	[4:12]  first tx id (equals the key's id)
//	[12:16] transaction count
//	[16:24] base timestamp, Unix ns
//	then per transaction:
//	  u8   kind | 0x80 if a UserRef follows | 0x40 if transfer fields follow
//	           | 0x20 if expired pending transfers follow
//	  u8   fail reason
//	  u16  entry count
//	  u32  timestamp - base, ns
//	  u64  UserRef              (if flagged)
//	  u64  original tx id       (if fail == Duplicate)
//	  32 bytes of account       (if kind == create_account):
//	       u64 id, u64 user_data[0], u64 user_data[1], u32 ledger, u16 code, u16 flags
//	  transfer fields           (if flagged: a transfer, not a Duplicate; format 5):
//	       u32 ledger, u16 code, u16 flags, u64 user_data,
//	       u64 pending id       (if flags has post_pending_transfer or void_pending_transfer)
//	       u32 timeout          (if flags has pending)
//	  expired pending transfers (if flagged; format 5): u16 k, k x u64 id
//	  2k x entry                (the releases of the expired, two each, if flagged)
//	  count x entry             (the transaction's own)
//	  entry = { u64 account, u8 column, i64 delta, i64 resulting column }
//
// Format 4 wrote no transfer fields (0x40 is never set there): such a
// transfer decodes with them zero, as a format 4 transfer had them.
//
// In every transaction the deltas to debit columns equal those to credit
// columns, posted and pending apart: the ledger's zero-sum invariant.
const (
	batchHeaderLen = 24
	txHeaderLen    = 8
	accountLen     = 32
	entryLen       = 25
	hasRefFlag     = 0x80
	hasXferFlag    = 0x40
	hasExpiryFlag  = 0x20
	kindMask       = 0x07
	xferLen        = 16                                 // transfer fields without pending id and timeout
	plainMaxLen    = txHeaderLen + xferLen + 2*entryLen // the longest plain record (isPlain)
)

// errBatch is wrapped by every decoding error; recovery turns it into a
// *CorruptError naming the key.
var errBatch = errors.New("bad WAL batch")

// appendBatchHeader appends a batch header to dst: checksum 0 (the WAL
// stage seals the batch; an index value's own checksum covers a copy), the
// first transaction id, the count and the base timestamp.
func appendBatchHeader(dst []byte, first uint64, count uint32, base int64) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	dst = binary.LittleEndian.AppendUint64(dst, first)
	dst = binary.LittleEndian.AppendUint32(dst, count)
	return binary.LittleEndian.AppendUint64(dst, uint64(base))
}

// encodeBatch appends the encoding of a prefix of recs to dst and returns it
// with the number of records encoded (at least 1 if recs is non-empty). It
// stops early when a timestamp delta does not fit in 32 bits, or before the
// batch would hold more than maxBytes.
//
// Plain records (isPlain: most of a busy ledger's) are written by a loop
// that calls nothing, at constant offsets into room reserved once; any
// other record, or one that needs dst to grow, by putTx. Appending field by
// field, checking the capacity and moving the length for each, made the
// encoding a sixth of the whole pipeline's instructions.
func encodeBatch(dst []byte, recs []txRecord, maxBytes int) ([]byte, int) {
	if len(recs) == 0 {
		return dst, 0
	}
	start := len(dst)
	base := recs[0].ts
	// The count is patched below.
	dst = appendBatchHeader(dst, recs[0].id, 0, base)
	i := 0 // records encoded
	for i < len(recs) {
		for ; i < len(recs); i++ {
			r := &recs[i]
			d := uint64(r.ts - base) // a negative delta wraps above MaxUint32
			if d > math.MaxUint32 || !r.isPlain() || r.n > 2 {
				break
			}
			xfer := r.kind == KindTransfer
			size := txHeaderLen + int(r.n)*entryLen
			if xfer {
				size += xferLen
			}
			off := len(dst)
			if (i > 0 && off-start+size > maxBytes) || cap(dst)-off < plainMaxLen {
				break
			}
			p := (*[plainMaxLen]byte)(dst[off : off+plainMaxLen])
			dst = dst[:off+size]
			k := byte(r.kind)
			if xfer {
				k |= hasXferFlag
			}
			p[0], p[1] = k, byte(r.fail)
			binary.LittleEndian.PutUint16(p[2:], uint16(r.n))
			binary.LittleEndian.PutUint32(p[4:], uint32(d))
			e := (*[2 * entryLen]byte)(p[txHeaderLen:])
			if xfer {
				putXfer(p[txHeaderLen:], r)
				e = (*[2 * entryLen]byte)(p[txHeaderLen+xferLen:])
			}
			switch r.n {
			case 2:
				putEntry(e[entryLen:], &r.inline[1])
				fallthrough
			case 1:
				putEntry(e[:], &r.inline[0])
			}
		}
		if i == len(recs) {
			break
		}
		r := &recs[i]
		d := r.ts - base
		if d < 0 || d > math.MaxUint32 {
			break
		}
		size := r.encodedLen()
		off := len(dst)
		if i > 0 && off-start+size > maxBytes {
			break
		}
		dst = slices.Grow(dst, max(size, plainMaxLen))[:off+size]
		putTx(dst[off:], r, uint32(d))
		i++
	}
	b := dst[start:]
	binary.LittleEndian.PutUint32(b[12:], uint32(i))
	binary.LittleEndian.PutUint32(b[0:], crc32.Checksum(b[4:], castagnoli))
	return dst, i
}

// putTx writes r's encoding, whose timestamp is base + d, into b, which is
// exactly r.encodedLen() bytes long.
func putTx(b []byte, r *txRecord, d uint32) {
	k := byte(r.kind)
	if r.userRef != 0 {
		k |= hasRefFlag
	}
	xfer := r.hasTransfer()
	if xfer {
		k |= hasXferFlag
	}
	var expired []uint64
	if r.extra != nil && len(r.extra.expired) > 0 {
		expired = r.extra.expired
		k |= hasExpiryFlag
	}
	_ = b[txHeaderLen-1]
	b[0], b[1] = k, byte(r.fail)
	binary.LittleEndian.PutUint16(b[2:], uint16(r.n))
	binary.LittleEndian.PutUint32(b[4:], d)
	b = b[txHeaderLen:]
	if r.userRef != 0 {
		binary.LittleEndian.PutUint64(b, r.userRef)
		b = b[8:]
	}
	if r.fail == Duplicate {
		binary.LittleEndian.PutUint64(b, r.orig)
		b = b[8:]
	}
	if r.kind == KindCreateAccount {
		putAccount(b, r.account())
		b = b[accountLen:]
	}
	if xfer {
		putXfer(b, r)
		b = b[xferLen:]
		if r.tflags&resolving != 0 {
			binary.LittleEndian.PutUint64(b, r.orig)
			b = b[8:]
		}
		if r.tflags&Pending != 0 {
			binary.LittleEndian.PutUint32(b, r.timeout)
			b = b[4:]
		}
	}
	if expired != nil {
		binary.LittleEndian.PutUint16(b, uint16(len(expired)))
		b = b[2:]
		for _, id := range expired {
			binary.LittleEndian.PutUint64(b, id)
			b = b[8:]
		}
		for i := range r.extra.exp {
			putEntry(b, &r.extra.exp[i])
			b = b[entryLen:]
		}
	}
	es := r.entries()
	for i := range es {
		putEntry(b, &es[i])
		b = b[entryLen:]
	}
}

// isPlain reports whether r is encoded as a header, a transfer's fields
// without pending id or timeout if it is a transfer, and its inline entries:
// no UserRef, not a Duplicate or account creation, no expiry, no entries
// beyond the inline two, no pending, post or void.
func (r *txRecord) isPlain() bool {
	return r.userRef == 0 && r.extra == nil && r.fail != Duplicate && r.kind != KindCreateAccount && r.tflags&(Pending|resolving) == 0
}

// putXfer writes a transfer's fields but its pending id and timeout.
func putXfer(b []byte, r *txRecord) {
	_ = b[xferLen-1]
	binary.LittleEndian.PutUint32(b, r.ledger)
	binary.LittleEndian.PutUint16(b[4:], r.code)
	binary.LittleEndian.PutUint16(b[6:], uint16(r.tflags))
	binary.LittleEndian.PutUint64(b[8:], r.userData)
}

func putEntry(b []byte, e *cellEntry) {
	_ = b[entryLen-1]
	binary.LittleEndian.PutUint64(b, e.acct)
	b[8] = byte(e.col)
	binary.LittleEndian.PutUint64(b[9:], uint64(e.delta))
	binary.LittleEndian.PutUint64(b[17:], uint64(e.value))
}

// putAccount writes m's accountLen bytes into b.
func putAccount(b []byte, m acctMeta) {
	_ = b[accountLen-1]
	binary.LittleEndian.PutUint64(b, m.id)
	binary.LittleEndian.PutUint64(b[8:], m.userData[0])
	binary.LittleEndian.PutUint64(b[16:], m.userData[1])
	binary.LittleEndian.PutUint32(b[24:], m.ledger)
	binary.LittleEndian.PutUint16(b[28:], m.code)
	binary.LittleEndian.PutUint16(b[30:], uint16(m.flags))
}

func appendAccount(dst []byte, m acctMeta) []byte {
	off := len(dst)
	dst = slices.Grow(dst, accountLen)[:off+accountLen]
	putAccount(dst[off:], m)
	return dst
}

func decodeAccount(b []byte) acctMeta {
	return acctMeta{
		id:       binary.LittleEndian.Uint64(b),
		userData: [2]uint64{binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[16:])},
		ledger:   binary.LittleEndian.Uint32(b[24:]),
		code:     binary.LittleEndian.Uint16(b[28:]),
		flags:    AccountFlags(binary.LittleEndian.Uint16(b[30:])),
	}
}

// accountsEqual reports whether b is ms in the account layout (putAccount).
// Where acctMeta's memory is that layout (a little-endian host: fields in
// the layout's order, no padding), it is one memory comparison: Open's
// check of 1M account records spent most of its time decoding them.
func accountsEqual(b []byte, ms []acctMeta) bool {
	if len(b) != len(ms)*accountLen {
		return false
	}
	if len(ms) == 0 {
		return true
	}
	if acctMetaIsLayout {
		return bytes.Equal(b, unsafe.Slice((*byte)(unsafe.Pointer(&ms[0])), len(b)))
	}
	return accountsEqualDecoded(b, ms)
}

func accountsEqualDecoded(b []byte, ms []acctMeta) bool {
	for i := range ms {
		if decodeAccount(b[i*accountLen:]) != ms[i] {
			return false
		}
	}
	return true
}

// acctMetaIsLayout: an acctMeta's bytes in memory are its putAccount
// encoding.
var acctMetaIsLayout = func() bool {
	m := acctMeta{id: 0x0102030405060708, userData: [2]uint64{0x1112131415161718, 0x2122232425262728},
		ledger: 0x31323334, code: 0x4142, flags: 0x5152}
	var b [accountLen]byte
	putAccount(b[:], m)
	return unsafe.Sizeof(m) == accountLen && bytes.Equal(b[:], unsafe.Slice((*byte)(unsafe.Pointer(&m)), accountLen))
}()

// encodedLen is the size of r's encoding in a batch.
func (r *txRecord) encodedLen() int {
	n := txHeaderLen + int(r.n)*entryLen
	if r.isPlain() { // most records: no optional part but a transfer's fields
		if r.kind == KindTransfer {
			n += xferLen
		}
		return n
	}
	if r.userRef != 0 {
		n += 8
	}
	if r.fail == Duplicate {
		n += 8
	}
	if r.kind == KindCreateAccount {
		n += accountLen
	}
	if r.hasTransfer() {
		n += xferLen
		if r.tflags&resolving != 0 {
			n += 8
		}
		if r.tflags&Pending != 0 {
			n += 4
		}
	}
	if r.extra != nil && len(r.extra.expired) > 0 {
		n += 2 + len(r.extra.expired)*(8+2*entryLen)
	}
	return n
}

// walTx is one decoded transaction. Its entries stay encoded in raw and are
// read with entry, so decoding allocates nothing.
type walTx struct {
	id      uint64
	userRef uint64
	dupOf   uint64
	ts      int64
	kind    Kind
	fail    FailReason
	n       int // entries: the expiry releases (nexp, first), then its own
	nexp    int
	acct    acctMeta // create_account
	xfer    xferFields
	expRaw  []byte // the expired pending transfers' ids, 8 bytes each
	raw     []byte
}

// expired returns the i-th pending transfer the record's expiry releases.
func (t *walTx) expired(i int) uint64 { return binary.LittleEndian.Uint64(t.expRaw[8*i:]) }

// own is the number of the transaction's own entries.
func (t *walTx) own() int { return t.n - t.nexp }

// xferFields are a transfer's fields as journaled.
type xferFields struct {
	ledger    uint32
	code      uint16
	flags     TransferFlags
	userData  uint64
	pendingID uint64
	timeout   uint32
}

// account returns entry i's account (its first field).
func (t *walTx) account(i int) uint64 { return binary.LittleEndian.Uint64(t.raw[i*entryLen:]) }

func (t *walTx) entry(i int) Entry { return decodeEntry(t.raw[i*entryLen:]) }

// decodeEntry decodes the entry at the start of b (entryLen bytes).
func decodeEntry(b []byte) Entry {
	return Entry{
		Account: binary.LittleEndian.Uint64(b),
		Column:  Column(b[8]),
		Delta:   int64(binary.LittleEndian.Uint64(b[9:])),
		Value:   int64(binary.LittleEndian.Uint64(b[17:])),
	}
}

func (t *walTx) result() Result {
	r := Result{ID: TxID(t.id), Kind: t.kind, Fail: t.fail, UserRef: t.userRef, DupOf: TxID(t.dupOf), Timestamp: t.ts}
	x := &t.xfer
	r.Ledger, r.Code, r.Flags, r.UserData, r.PendingID, r.Timeout = x.ledger, x.code, x.flags, x.userData, TxID(x.pendingID), x.timeout
	if t.kind == KindCreateAccount {
		a := t.acct.public()
		r.Account = &a
	}
	if own := t.own(); own > 0 {
		r.Entries = make([]Entry, own)
		for i := range r.Entries {
			r.Entries[i] = t.entry(t.nexp + i)
		}
	}
	if k := t.nexp / 2; k > 0 {
		r.Expired = make([]TxID, k)
		for i := range r.Expired {
			r.Expired[i] = TxID(t.expired(i))
		}
	}
	return r
}

// batchReader iterates the transactions of one verified WAL batch.
type batchReader struct {
	data  []byte
	off   int
	first uint64
	count uint64
	base  int64
	i     uint64
}

// openBatch verifies the checksum and header of a batch value. It never
// panics on arbitrary input.
func openBatch(val []byte) (batchReader, error) {
	if len(val) < batchHeaderLen {
		return batchReader{}, fmt.Errorf("%w: %d bytes, shorter than its header", errBatch, len(val))
	}
	if got, want := crc32.Checksum(val[4:], castagnoli), binary.LittleEndian.Uint32(val); got != want {
		return batchReader{}, fmt.Errorf("%w: checksum %08x, want %08x", errBatch, got, want)
	}
	return parseBatch(val)
}

// parseBatch checks the header of a batch whose checksum was verified
// (wal.Scan verifies each batch with batchSpan before it hands it on).
func parseBatch(val []byte) (batchReader, error) {
	if len(val) < batchHeaderLen {
		return batchReader{}, fmt.Errorf("%w: %d bytes, shorter than its header", errBatch, len(val))
	}
	b := batchReader{
		data:  val,
		off:   batchHeaderLen,
		first: binary.LittleEndian.Uint64(val[4:]),
		count: uint64(binary.LittleEndian.Uint32(val[12:])),
		base:  int64(binary.LittleEndian.Uint64(val[16:])),
	}
	if b.count == 0 || b.first == 0 || b.first+b.count < b.first {
		return batchReader{}, fmt.Errorf("%w: header first=%d count=%d", errBatch, b.first, b.count)
	}
	return b, nil
}

func (b *batchReader) last() uint64 { return b.first + b.count - 1 }

// next decodes the next transaction into t; it returns false after the last.
// Structural rules are checked here: known kind and fail reason, entry counts
// that fit the kind, deltas that sum to zero, and no trailing bytes.
func (b *batchReader) next(t *walTx) (bool, error) {
	if b.i == b.count {
		if b.off != len(b.data) {
			return false, fmt.Errorf("%w: %d trailing bytes", errBatch, len(b.data)-b.off)
		}
		return false, nil
	}
	d := b.data[b.off:]
	if len(d) < txHeaderLen {
		return false, fmt.Errorf("%w: tx %d truncated", errBatch, b.first+b.i)
	}
	// Cleared, then set field by field: a composite literal is built on
	// the stack and copied, a fifth of a replay's decoding.
	*t = walTx{}
	t.id = b.first + b.i
	t.kind = Kind(d[0] & kindMask)
	t.fail = FailReason(d[1])
	t.n = int(binary.LittleEndian.Uint16(d[2:]))
	t.ts = b.base + int64(binary.LittleEndian.Uint32(d[4:]))
	p := txHeaderLen
	if d[0]&0x18 != 0 || t.kind < KindDeposit || t.kind >= numKinds || t.fail >= numFailReasons {
		return false, fmt.Errorf("%w: tx %d has kind %d, fail reason %d", errBatch, t.id, t.kind, t.fail)
	}
	if d[0]&hasRefFlag != 0 {
		if len(d) < p+8 {
			return false, fmt.Errorf("%w: tx %d truncated", errBatch, t.id)
		}
		t.userRef = binary.LittleEndian.Uint64(d[p:])
		p += 8
	}
	if t.fail == Duplicate {
		if len(d) < p+8 {
			return false, fmt.Errorf("%w: tx %d truncated", errBatch, t.id)
		}
		t.dupOf = binary.LittleEndian.Uint64(d[p:])
		p += 8
	}
	if t.kind == KindCreateAccount {
		if len(d) < p+accountLen {
			return false, fmt.Errorf("%w: tx %d truncated", errBatch, t.id)
		}
		t.acct = decodeAccount(d[p:])
		p += accountLen
	}
	if d[0]&hasXferFlag != 0 {
		if t.kind != KindTransfer || t.fail == Duplicate {
			return false, fmt.Errorf("%w: tx %d (%v, %v) has transfer fields", errBatch, t.id, t.kind, t.fail)
		}
		if len(d) < p+xferLen {
			return false, fmt.Errorf("%w: tx %d truncated", errBatch, t.id)
		}
		x := &t.xfer
		x.ledger = binary.LittleEndian.Uint32(d[p:])
		x.code = binary.LittleEndian.Uint16(d[p+4:])
		x.flags = TransferFlags(binary.LittleEndian.Uint16(d[p+6:]))
		x.userData = binary.LittleEndian.Uint64(d[p+8:])
		p += xferLen
		if !x.flags.valid() {
			return false, fmt.Errorf("%w: tx %d has transfer flags %#x", errBatch, t.id, x.flags)
		}
		if x.flags&resolving != 0 {
			if len(d) < p+8 {
				return false, fmt.Errorf("%w: tx %d truncated", errBatch, t.id)
			}
			x.pendingID = binary.LittleEndian.Uint64(d[p:])
			p += 8
		}
		if x.flags&Pending != 0 {
			if len(d) < p+4 {
				return false, fmt.Errorf("%w: tx %d truncated", errBatch, t.id)
			}
			x.timeout = binary.LittleEndian.Uint32(d[p:])
			p += 4
		}
	}
	if d[0]&hasExpiryFlag != 0 {
		if len(d) < p+2 {
			return false, fmt.Errorf("%w: tx %d truncated", errBatch, t.id)
		}
		k := int(binary.LittleEndian.Uint16(d[p:]))
		p += 2
		if k == 0 || k > maxExpiryPerTx || len(d) < p+8*k {
			return false, fmt.Errorf("%w: tx %d expires %d pending transfers", errBatch, t.id, k)
		}
		t.expRaw = d[p : p+8*k]
		p += 8 * k
		t.nexp = 2 * k
		t.n += t.nexp
	}
	own := t.own()
	switch {
	case t.fail != OK && own != 0,
		t.kind == KindCreateAccount && own != 0,
		t.fail == OK && t.kind != KindComposite && t.kind != KindCreateAccount && own != 2 &&
			!(t.kind == KindTransfer && t.xfer.flags&PostPendingTransfer != 0 && own == 4),
		t.fail == OK && t.kind == KindComposite && (own == 0 || own > MaxLegs):
		return false, fmt.Errorf("%w: tx %d (%v, %v) has %d entries", errBatch, t.id, t.kind, t.fail, own)
	}
	if len(d) < p+t.n*entryLen {
		return false, fmt.Errorf("%w: tx %d truncated", errBatch, t.id)
	}
	t.raw = d[p : p+t.n*entryLen]
	var posted, pending sum128 // credits minus debits
	for i := 0; i < t.n; i++ {
		e := t.entry(i)
		if e.Column >= numColumns || e.Value < 0 {
			return false, fmt.Errorf("%w: tx %d entry %d has column %d, value %d", errBatch, t.id, i, e.Column, e.Value)
		}
		if i < t.nexp && (e.Column != DebitsPending+Column(i%2) || e.Delta > 0) {
			return false, fmt.Errorf("%w: tx %d expiry entry %d is %v %+d", errBatch, t.id, i, e.Column, e.Delta)
		}
		balance(&posted, &pending, &e)
	}
	if !posted.zero() || !pending.zero() {
		return false, fmt.Errorf("%w: tx %d debits and credits differ", errBatch, t.id)
	}
	b.off += p + t.n*entryLen
	b.i++
	return true, nil
}

// balance adds e's delta to the credits-minus-debits sum of its kind of
// column (e.Column is valid).
func balance(posted, pending *sum128, e *Entry) {
	s := posted
	if e.Column >= DebitsPending {
		s = pending
	}
	if e.Column == DebitsPosted || e.Column == DebitsPending {
		s.sub(e.Delta)
	} else {
		s.add(e.Delta)
	}
}

// nextCreate decodes the next transaction into m if it is a successful
// account creation without UserRef, which next accepts; for any other it
// returns false and changes nothing, as nextPlain.
func (b *batchReader) nextCreate(m *acctMeta) (id uint64, ts int64, ok bool) {
	if b.i == b.count {
		return 0, 0, false
	}
	d := b.data[b.off:]
	if len(d) < txHeaderLen+accountLen || d[0] != byte(KindCreateAccount) || FailReason(d[1]) != OK ||
		binary.LittleEndian.Uint16(d[2:]) != 0 {
		return 0, 0, false
	}
	*m = decodeAccount(d[txHeaderLen:])
	id, ts = b.first+b.i, b.base+int64(binary.LittleEndian.Uint32(d[4:]))
	b.off += txHeaderLen + accountLen
	b.i++
	return id, ts, true
}

// nextPlain decodes the next transaction into es if it is a plain deposit
// or transfer that next accepts: not failed, no UserRef or expiry, two
// entries, transfer fields (if any) without pending, post or void. For any
// other it returns false and changes nothing: next decodes it, and names
// what is wrong. It skips what next fills in a walTx, which the replay of
// such a transaction does not read.
func (b *batchReader) nextPlain(es *[2]Entry) (id uint64, ts int64, ok bool) {
	if b.i == b.count {
		return 0, 0, false
	}
	d := b.data[b.off:]
	if len(d) < txHeaderLen+xferLen+2*entryLen {
		return 0, 0, false
	}
	h, kind := d[0], Kind(d[0]&kindMask)
	if h&^(kindMask|hasXferFlag) != 0 || FailReason(d[1]) != OK || binary.LittleEndian.Uint16(d[2:]) != 2 ||
		(kind != KindDeposit && kind != KindTransfer) {
		return 0, 0, false
	}
	p := txHeaderLen
	if h&hasXferFlag != 0 {
		f := TransferFlags(binary.LittleEndian.Uint16(d[p+6:]))
		if kind != KindTransfer || !f.valid() || f&(Pending|resolving) != 0 {
			return 0, 0, false
		}
		p += xferLen
	}
	var posted, pending sum128
	for i := range es {
		e := &es[i]
		*e = decodeEntry(d[p+i*entryLen:])
		if e.Column >= numColumns || e.Value < 0 {
			return 0, 0, false
		}
		balance(&posted, &pending, e)
	}
	if !posted.zero() || !pending.zero() {
		return 0, 0, false
	}
	id, ts = b.first+b.i, b.base+int64(binary.LittleEndian.Uint32(d[4:]))
	b.off += p + 2*entryLen
	b.i++
	return id, ts, true
}

// record rebuilds the ring record t was encoded from, as far as encoding
// needs it (the cells are not journaled).
func (t *walTx) record() txRecord {
	own := t.own()
	r := txRecord{id: t.id, userRef: t.userRef, ts: t.ts, kind: t.kind, fail: t.fail, n: uint8(own)}
	if t.fail == Duplicate {
		r.orig = t.dupOf
	}
	switch {
	case t.kind == KindCreateAccount:
		r.setAccount(t.acct)
	case own > len(r.inline):
		es := make([]cellEntry, own)
		for i := range es {
			es[i] = toCellEntry(t.entry(t.nexp + i))
		}
		r.setEntries(es)
	default:
		for i := 0; i < own; i++ {
			r.inline[i] = toCellEntry(t.entry(t.nexp + i))
		}
	}
	if t.nexp > 0 {
		if r.extra == nil {
			r.extra = &recExtra{}
		}
		for i := 0; i < t.nexp; i++ {
			r.extra.exp = append(r.extra.exp, toCellEntry(t.entry(i)))
		}
		for i := 0; i < t.nexp/2; i++ {
			r.extra.expired = append(r.extra.expired, t.expired(i))
		}
	}
	if r.hasTransfer() {
		x := &t.xfer
		r.ledger, r.code, r.tflags, r.userData, r.timeout = x.ledger, x.code, x.flags, x.userData, x.timeout
		if x.flags&resolving != 0 {
			r.orig = x.pendingID
		}
	}
	return r
}

// toCellEntry is e as the encoder takes it (the cell is not encoded).
func toCellEntry(e Entry) cellEntry {
	return cellEntry{acct: e.Account, delta: e.Delta, value: e.Value, col: e.Column}
}
