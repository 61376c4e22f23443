package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// The history and query indexes, in their own pebble store (indexstore.go).
// The Snapshotter writes them once it has applied a block's worth of
// transactions (or runs out of work), as one pebble batch, and then stores
// the index's mark (Ledger.indexed): a read that loads the mark (its AsOf)
// sees every key of every transaction up to it. Nothing is synced for them;
// the store keeps a prefix of its batches across a crash, the "I" key and
// the last block say how far they reach, and Open replays the WAL after
// that point into them (catchUpIndex) or cuts what a torn tail took away
// (cutIndex). Keys (ids big-endian, so that byte order is id order):
//
//	"z" + first tx id               block: up to blockMax consecutive transactions of one WAL
//	                                record, all kinds and outcomes: a reference to their bytes in
//	                                the kept segment index/wal/<name> (indexblock.go), or (checkpoints,
//	                                builds before) a copy: one WAL batch encoding plus each one's offset
//	"t" + last ts + first tx id     finds blocks by timestamp (the value: an empty sealed record)
//	"P" + field + value + first tx  posting: which transfers of block first have field = value
//	                                (bitmap); fields ledger, and a transfer's non-zero code, user_data
//	"h" + account id + tx id        history record of an account with the History flag: its four
//	                                columns after tx, and tx itself (one WAL batch of it)
//	"p" + field + value + slot      account posting: the account in slot has field = value; the
//	                                value holds its creation tx and timestamp
//	"I"                             index state: first and last transaction indexed
//
// A posting value is 16 bytes (a u32 ledger or u16 code big-endian in the
// last bytes, a user_data as two u64), so every field's keys sort by value,
// then by id.
//
// The blocks, nearly all of the index's bytes, sort after every other
// index key: pebble then cuts each flush's output into a file of the other
// keys and files of blocks alone, which later flushes never overlap (block
// ids ascend), so compactions move the blocks' files down the levels
// instead of rewriting them. Under "T", between the postings and the time
// keys, every flushed file spanned the blocks of later flushes.
const (
	prefixBlock       = 'z'
	prefixBlockBefore = 'T' // the blocks of builds before: such an index is rebuilt (historyrecovery.go)
	prefixBlockTime   = 't'
	prefixTxPosting   = 'P'
	prefixHistory     = 'h'
	prefixAcctPosting = 'p'
	prefixIndexState  = 'I'
)

var indexStateKey = []byte{prefixIndexState}

// blockMax bounds the transactions of a block: a lookup decodes one
// transaction of it, but checks the whole block's checksum.
const blockMax = 256

// Posting fields. fieldAll holds every account (a query without an equality
// field walks it); transfers have no fieldAll: their blocks are that list.
const (
	fieldAll byte = iota
	fieldLedger
	fieldCode
	fieldUserData
)

// History record kinds (the byte after the checksum).
const (
	histTransfer byte = iota
	// histOpening: the account's columns when the index started on a
	// ledger that already held transactions; no transfer.
	histOpening
)

// History record side bits: how the transaction moved the account.
const (
	sideDebit  = 1
	sideCredit = 2
)

const (
	histHeaderLen = 4 + 1 + 1 + 4*8 // CRC, kind, side, columns
	postingKeyLen = 1 + 1 + 16 + 8
	postingValLen = 4 + blockMax/8 // CRC, bitmap
	timeKeyLen    = 1 + 8 + 8
)

// indexWriter builds the index keys of applied transactions into one
// pebble batch; flush commits it. It belongs to the Snapshotter (or to
// Open, before the pipeline starts).
type indexWriter struct {
	db    *pebble.DB
	accts *accountTable
	hist  []uint64 // bit per slot: the account has the History flag
	b     *pebble.Batch
	from  uint64 // first transaction the index holds
	last  uint64 // last transaction in b or before
	hpend []histPending
	ents  []cellEntry // scratch of allEntries
	nHist int         // accounts with the History flag
	// refs are the WAL records of the transactions in pend (blockTx.ref);
	// cur is the record the next one staged belongs to, curOff its payload
	// offset (stage).
	refs   []walRef
	cur    walRef
	curOff uint32
	// raw holds encodings of transactions that have no record to refer
	// to (a cut's copied block, rewritten): refs of seq 0.
	raw   []byte
	henc  []byte // the encodings of the history records pending (hpend)
	kept  *keptSegments
	val   []byte
	pval  []byte
	posts []blockPosting
	// lastPost is, per field, the index in posts of the value posted last.
	lastPost [4]int
	key      [postingKeyLen]byte
	// ledger is the one ledger of every account so far (0: none yet), and
	// mixed says there are several: until then a transfer's ledger needs
	// no look at its accounts.
	ledger uint32
	mixed  bool
	// live: the Snapshotter writes, and its batches carry no "I" record:
	// each one's last block marks its end (readIndexState), which spares
	// a memtable insert per batch. Open's batches (catch-up, cut,
	// restart) write it.
	live bool
	// pend are the transactions the Snapshotter has applied and not yet
	// indexed (where their encodings are: refs).
	pend []blockTx
	// later holds the time keys and postings of the blocks being written:
	// key, or posting key ++ value (setLater).
	later []byte
	// For Stats.
	written atomic.Uint64 // transactions indexed since Open (catch-up included)
}

// blockPosting is one field value's bitmap of a block being written.
type blockPosting struct {
	field byte
	value uint64 // transfers' fields fit 64 bits
	bits  [blockMax / 64]uint64
}

// cellSource gives the value of a cell after the transaction being indexed.
type cellSource interface{ load(cell uint64) int64 }

// liveCells are the readable balances: the Snapshotter has just stored the
// transaction's entries.
type liveCells []atomic.Int64

func (c liveCells) load(i uint64) int64 { return c[i].Load() }

func newIndexWriter(db *pebble.DB, kept *keptSegments, accts *accountTable, maxAccounts uint64) *indexWriter {
	ix := &indexWriter{db: db, kept: kept, accts: accts, hist: make([]uint64, (maxAccounts+63)/64), b: db.NewBatch()}
	for s := uint64(1); s < accts.n; s++ {
		if accts.meta[s].flags&History != 0 {
			ix.hist[s/64] |= 1 << (s % 64)
			ix.nHist++
		}
		ix.sawLedger(accts.meta[s].ledger)
	}
	return ix
}

func (ix *indexWriter) sawLedger(l uint32) {
	if ix.ledger == 0 {
		ix.ledger = l
	} else if l != ix.ledger {
		ix.mixed = true
	}
}

// oneLedger reports whether every account is in one ledger.
func (ix *indexWriter) oneLedger() bool { return !ix.mixed }

func (ix *indexWriter) hasHistory(slot uint64) bool { return ix.hist[slot/64]&(1<<(slot%64)) != 0 }

// history adds the keys of recs[i] that are not per block: the history
// records of its accounts with the History flag (cells holds their values
// after it), or the postings of the account it created.
func (ix *indexWriter) history(recs []txRecord, i int, cells cellSource) error {
	r := &recs[i]
	if ix.nHist == 0 && r.kind != KindCreateAccount {
		return nil
	}
	if r.kind == KindCreateAccount && r.fail == OK {
		m := r.account()
		s, ok := ix.accts.slot(m.id)
		if !ok {
			return fmt.Errorf("ledger: index: account %d of tx %d not in the table", m.id, r.id)
		}
		if m.flags&History != 0 && !ix.hasHistory(s) {
			ix.hist[s/64] |= 1 << (s % 64)
			ix.nHist++
		}
		ix.sawLedger(m.ledger)
		return ix.accountPostings(s, m, r.id, r.ts)
	}
	es := ix.allEntries(r)
	for j := range es {
		s := uint64(es[j].cell) / cellsPerAccount
		if !ix.hasHistory(s) || seenSlot(es[:j], s) {
			continue
		}
		side := byte(0)
		for k := j; k < len(es); k++ {
			if uint64(es[k].cell)/cellsPerAccount != s {
				continue
			}
			if es[k].col == DebitsPosted || es[k].col == DebitsPending {
				side |= sideDebit
			} else {
				side |= sideCredit
			}
		}
		h := histPending{account: es[j].acct, tx: r.id, ts: r.ts, side: side}
		for c := range numColumns {
			h.cols[c] = cells.load(cell(s, c))
		}
		if at := len(ix.henc); len(ix.hpend) > 0 && ix.hpend[len(ix.hpend)-1].tx == r.id {
			h.enc = ix.hpend[len(ix.hpend)-1].enc // the transaction's other History account
		} else {
			// Encoded here: the record goes once the Snapshotter has
			// moved on from r (History accounts only, so few).
			n := r.encodedLen()
			ix.henc = slices.Grow(ix.henc, n)[:at+n]
			putTx(ix.henc[at:], r, 0)
			h.enc = rawTx{off: uint32(at), n: uint32(n)}
		}
		ix.hpend = append(ix.hpend, h)
	}
	return nil
}

// histPending is a history record to write with the next batch.
type histPending struct {
	account, tx uint64
	ts          int64
	enc         rawTx // the transaction's encoding in henc, its timestamp ts
	side        byte
	cols        [numColumns]int64
}

// writeHistory adds the pending history records to the batch. A record's
// transaction is a batch of the one transaction with the batch checksum 0
// (the record's checksum covers it).
func (ix *indexWriter) writeHistory() error {
	for _, h := range ix.hpend {
		v := append(ix.val[:0], 0, 0, 0, 0, histTransfer, h.side)
		for _, c := range h.cols {
			v = binary.LittleEndian.AppendUint64(v, uint64(c))
		}
		v = appendBatchHeader(v, h.tx, 1, h.ts)
		v = append(v, ix.henc[h.enc.off:h.enc.off+h.enc.n]...)
		sealInPlace(v)
		ix.val = v
		if err := ix.b.Set(historyKey(ix.key[:0], h.account, h.tx), v, nil); err != nil {
			return err
		}
	}
	ix.hpend, ix.henc = ix.hpend[:0], ix.henc[:0]
	return nil
}

// allEntries are every entry of r: the expiry scan's releases (which
// even a failed transaction carries), then its own.
func (ix *indexWriter) allEntries(r *txRecord) []cellEntry {
	if r.extra == nil || len(r.extra.exp) == 0 {
		return r.entries()
	}
	ix.ents = append(append(ix.ents[:0], r.extra.exp...), r.entries()...)
	return ix.ents
}

// seenSlot reports whether an entry of es is on slot s.
func seenSlot(es []cellEntry, s uint64) bool {
	for i := range es {
		if uint64(es[i].cell)/cellsPerAccount == s {
			return true
		}
	}
	return false
}

func appendHistHeader(dst []byte, kind, side byte, cells cellSource, slot uint64) []byte {
	dst = append(dst, 0, 0, 0, 0, kind, side)
	for c := range numColumns {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(cells.load(cell(slot, c))))
	}
	return dst
}

// sealInPlace writes the CRC32C of b[4:] into b[:4].
func sealInPlace(b []byte) {
	binary.LittleEndian.PutUint32(b, crc32.Checksum(b[4:], castagnoli))
}

func historyKey(dst []byte, account, tx uint64) []byte {
	dst = append(dst, prefixHistory)
	dst = binary.BigEndian.AppendUint64(dst, account)
	return binary.BigEndian.AppendUint64(dst, tx)
}

func postingKey(dst []byte, prefix, field byte, value *[16]byte, id uint64) []byte {
	dst = append(dst, prefix, field)
	dst = append(dst, value[:]...)
	return binary.BigEndian.AppendUint64(dst, id)
}

func u32Value(v uint32) (b [16]byte) {
	binary.BigEndian.PutUint32(b[12:], v)
	return b
}

func u16Value(v uint16) (b [16]byte) {
	binary.BigEndian.PutUint16(b[14:], v)
	return b
}

func u64Value(v uint64) (b [16]byte) {
	binary.BigEndian.PutUint64(b[8:], v)
	return b
}

func userDataValue(u [2]uint64) (b [16]byte) {
	binary.BigEndian.PutUint64(b[:], u[0])
	binary.BigEndian.PutUint64(b[8:], u[1])
	return b
}

// accountPostings writes the postings of the account created in slot s.
func (ix *indexWriter) accountPostings(s uint64, m acctMeta, tx uint64, ts int64) error {
	v := append(ix.pval[:0], 0, 0, 0, 0)
	v = binary.LittleEndian.AppendUint64(v, tx)
	v = binary.LittleEndian.AppendUint64(v, uint64(ts))
	sealInPlace(v)
	ix.pval = v
	for _, p := range [...]struct {
		f byte
		v [16]byte
	}{{fieldAll, [16]byte{}}, {fieldLedger, u32Value(m.ledger)}, {fieldCode, u16Value(m.code)}, {fieldUserData, userDataValue(m.userData)}} {
		if err := ix.b.Set(postingKey(ix.key[:0], prefixAcctPosting, p.f, &p.v, s), v, nil); err != nil {
			return err
		}
	}
	return nil
}

// ledgerOf is the ledger of a transaction that moved money: a transfer
// carries it; for the others it is that of their first account that is
// not the system account (the Transactor keeps every leg in one ledger).
func (ix *indexWriter) ledgerOf(r *txRecord) uint32 {
	if r.hasTransfer() {
		return r.ledger
	}
	if !ix.mixed {
		return ix.ledger
	}
	for _, e := range r.entries() {
		if s := uint64(e.cell) / cellsPerAccount; s != 0 {
			return ix.accts.meta[s].ledger
		}
	}
	return 0
}

// isTransfer reports whether r moved money: what QueryTransfers returns.
func isTransfer(r *txRecord) bool { return r.fail == OK && r.kind != KindCreateAccount }

// rawTx locates one encoding in a byte slice.
type rawTx struct{ off, n uint32 }

// blockTx is what a block needs of a transaction: plain values, so that
// staging a transaction writes 48 bytes and leaves no reference to its
// record's entries.
type blockTx struct {
	id, userData uint64 // userData: a transfer's, 0 for the others
	ts           int64
	ledger       uint32 // posted: ledgerOf
	code         uint16 // a transfer's, 0 for the others
	posted       bool   // isTransfer: a posting names it; if not, ledger, code and userData are not set
	// Where its encoding is: record refs[ref], payload bytes [off, off+n)
	// (for a ref of seq 0, bytes of raw).
	ref, off, n uint32
}

// stageBlockTxs adds what the blocks need of recs to ix.pend, all but
// where their encodings are, and returns the entries added.
func (ix *indexWriter) stageBlockTxs(recs []txRecord) []blockTx {
	at := len(ix.pend)
	ix.pend = slices.Grow(ix.pend, len(recs))[:at+len(recs)]
	pend := ix.pend[at:]
	for i := range recs {
		r, t := &recs[i], &pend[i]
		t.id, t.ts = r.id, r.ts
		t.posted = isTransfer(r)
		switch {
		case !t.posted:
		case r.kind == KindTransfer: // OK, so not a Duplicate: it carries its fields
			t.ledger, t.code, t.userData = r.ledger, r.code, r.userData
		default:
			t.ledger, t.code, t.userData = ix.ledgerOf(r), 0, 0
		}
	}
	return pend
}

// refFor returns the index in ix.refs of record w, added if it is not the
// last there.
func (ix *indexWriter) refFor(w *walRef) uint32 {
	if n := len(ix.refs); n == 0 || ix.refs[n-1] != *w {
		ix.refs = append(ix.refs, *w)
	}
	return uint32(len(ix.refs) - 1)
}

// blocks adds the blocks of the transactions ix.pend, their time keys and
// postings, and the index state, to the batch. A block holds transactions
// of one record: a reference to them (putRefBlock), or a copy of the
// encodings of a ref of seq 0 (putCopiedBlock).
func (ix *indexWriter) blocks() error {
	pend := ix.pend
	for off := 0; off < len(pend); {
		n := min(blockMax, len(pend)-off)
		first, ref := pend[off].id, pend[off].ref
		ix.posts = ix.posts[:0]
		ix.lastPost = [4]int{-1, -1, -1, -1}
		// Most transfers post the ledger of the one before: that run's
		// bits gather here, without a call, until another ledger's.
		lp, ledger, run := -1, uint32(0), [blockMax / 64]uint64{}
		for j, t := range pend[off : off+n] {
			if t.ref != ref {
				n = j // a block never spans two records
				break
			}
			if !t.posted {
				continue
			}
			if lp < 0 || t.ledger != ledger {
				if lp >= 0 {
					ix.posts[lp].or(&run)
				}
				ix.post(fieldLedger, uint64(t.ledger), uint(j))
				lp, ledger, run = ix.lastPost[fieldLedger], t.ledger, [blockMax / 64]uint64{}
			}
			run[uint8(j)/64] |= 1 << (uint8(j) % 64)
			// A zero code or user_data matches any in a query: never
			// looked up, so not posted.
			if t.code != 0 {
				ix.post(fieldCode, uint64(t.code), uint(j))
			}
			if t.userData != 0 {
				ix.post(fieldUserData, t.userData, uint(j))
			}
		}
		if lp >= 0 {
			ix.posts[lp].or(&run)
		}
		blk := pend[off : off+n]
		var err error
		if r := &ix.refs[ref]; r.seq != 0 {
			err = ix.putRefBlock(blk, r)
		} else {
			err = ix.putCopiedBlock(blk, r.base)
		}
		if err != nil {
			return err
		}
		// The time key and postings go in after every block (below).
		ix.later = append(ix.later, prefixBlockTime)
		ix.later = binary.BigEndian.AppendUint64(ix.later, tsKey(blk[n-1].ts))
		ix.later = binary.BigEndian.AppendUint64(ix.later, first)
		for i := range ix.posts {
			p := &ix.posts[i]
			pv := p.key()
			ix.later = postingKey(ix.later, prefixTxPosting, p.field, &pv, first)
			v := append(ix.later, 0, 0, 0, 0)
			for _, w := range p.bits {
				v = binary.LittleEndian.AppendUint64(v, w)
			}
			sealInPlace(v[len(v)-postingValLen:])
			ix.later = v
		}
		off += n
	}
	if err := ix.setLater(); err != nil {
		return err
	}
	ix.last = pend[len(pend)-1].id
	if ix.live {
		return nil // the batch's last block says how far the index reaches (readIndexState)
	}
	return ix.b.Set(indexStateKey, encodeIndexState(ix.from, ix.last), nil)
}

// putRefBlock adds the reference block of blk, transactions of record r
// whose postings ix.posts holds, to the batch, built where the batch
// holds it.
func (ix *indexWriter) putRefBlock(blk []blockTx, r *walRef) error {
	n, np := len(blk), len(ix.posts)
	op := ix.b.SetDeferred(1+8, 12+np*17+refLen)
	op.Key[0] = prefixBlock
	binary.BigEndian.PutUint64(op.Key[1:], blk[0].id)
	v := appendBlockHead(op.Value[:0], uint32(n)|refBlockBit, ix.posts)
	from := blk[0].off
	v = appendRef(v, r, from, blk[n-1].off+blk[n-1].n-from)
	if len(v) != len(op.Value) || &v[0] != &op.Value[0] {
		return fmt.Errorf("ledger: index: block of tx %d: %d bytes built, %d reserved", blk[0].id, len(v), len(op.Value))
	}
	sealInPlace(v)
	return op.Finish()
}

// putCopiedBlock adds the copied block of blk, whose encodings are
// consecutive in ix.raw with timestamps based on base, to the batch.
func (ix *indexWriter) putCopiedBlock(blk []blockTx, base int64) error {
	n := len(blk)
	start, end := blk[0].off, blk[n-1].off+blk[n-1].n
	v := appendBlockHead(ix.val[:0], uint32(n), ix.posts)
	for _, t := range blk {
		v = binary.LittleEndian.AppendUint32(v, batchHeaderLen+t.off-start)
	}
	v = appendBatchHeader(v, blk[0].id, uint32(n), base)
	v = append(v, ix.raw[start:end]...)
	sealInPlace(v)
	ix.val = v
	return ix.b.Set(idKey(prefixBlock, blk[0].id), v, nil)
}

// appendBlockHead appends a block value's head: the checksum's room, the
// count word and the postings' fields and values.
func appendBlockHead(v []byte, count uint32, posts []blockPosting) []byte {
	v = append(v, 0, 0, 0, 0)
	v = binary.LittleEndian.AppendUint32(v, count)
	v = binary.LittleEndian.AppendUint32(v, uint32(len(posts)))
	for i := range posts {
		pv := posts[i].key()
		v = append(v, posts[i].field)
		v = append(v, pv[:]...)
	}
	return v
}

// setLater adds the time keys and postings blocks left in ix.later, the
// time keys after the postings: pebble inserts a batch's keys in order,
// and one that follows its predecessor in key order is found from where
// that went, so the blocks' keys go in as runs by prefix (blocks, then
// postings, then time keys), not interleaved.
func (ix *indexWriter) setLater() error {
	for _, pass := range [...]byte{prefixTxPosting, prefixBlockTime} {
		for b := ix.later; len(b) > 0; {
			k, v := b[:timeKeyLen], timeValue
			if b[0] == prefixTxPosting {
				k, v = b[:postingKeyLen], b[postingKeyLen:postingKeyLen+postingValLen]
			}
			b = b[len(k):]
			if k[0] == prefixTxPosting {
				b = b[len(v):]
			}
			if k[0] != pass {
				continue
			}
			if err := ix.b.Set(k, v, nil); err != nil {
				return err
			}
		}
	}
	ix.later = ix.later[:0]
	return nil
}

// key is the posting's value as keys hold it.
func (p *blockPosting) key() [16]byte {
	if p.field == fieldLedger {
		return u32Value(uint32(p.value))
	}
	if p.field == fieldCode {
		return u16Value(uint16(p.value))
	}
	return u64Value(p.value)
}

// or sets bits in p's bitmap.
func (p *blockPosting) or(bits *[blockMax / 64]uint64) {
	for i := range p.bits {
		p.bits[i] |= bits[i]
	}
}

// post sets transaction j of the block in field's posting of value.
func (ix *indexWriter) post(field byte, value uint64, j uint) {
	if i := ix.lastPost[field]; i >= 0 && ix.posts[i].value == value {
		ix.posts[i].bits[j/64] |= 1 << (j % 64)
		return
	}
	ix.postNew(field, value, j)
}

// postNew is post of a value other than the field's last.
func (ix *indexWriter) postNew(field byte, value uint64, j uint) {
	i := -1
	for k := range ix.posts {
		if ix.posts[k].field == field && ix.posts[k].value == value {
			i = k
			break
		}
	}
	if i < 0 {
		ix.posts = append(ix.posts, blockPosting{field: field, value: value})
		i = len(ix.posts) - 1
	}
	ix.lastPost[field] = i
	ix.posts[i].bits[j/64] |= 1 << (j % 64)
}

// timeValue is every time key's value: the key says it all, but no
// stored record is empty or unchecked.
var timeValue = sealRecord(nil)

// tsKey orders int64 timestamps as unsigned big-endian keys.
func tsKey(ts int64) uint64 { return uint64(ts) ^ 1<<63 }

// commit writes the batch, unsynced.
func (ix *indexWriter) commit() error {
	if ix.b.Empty() {
		return nil
	}
	err := ix.b.Commit(pebble.NoSync)
	ix.b.Reset()
	if err != nil {
		return fmt.Errorf("ledger: write index: %w", err)
	}
	return nil
}

// apply indexes recs, whose encodings pos locates (refs, raw), as one
// pebble batch. The history records were noted by history as each
// transaction was applied. Open's catch-up and cut.
func (ix *indexWriter) apply(recs []txRecord, pos []txPos) error {
	ix.pend = ix.pend[:0]
	pend := ix.stageBlockTxs(recs)
	for i := range pend {
		pend[i].ref, pend[i].off, pend[i].n = pos[i].ref, pos[i].off, pos[i].n
	}
	return ix.write()
}

// txPos is where a transaction's encoding is: blockTx's ref, off, n.
type txPos struct{ ref, off, n uint32 }

// write indexes the transactions staged in ix.pend as one pebble batch,
// and empties them.
func (ix *indexWriter) write() error {
	if err := ix.writeHistory(); err != nil {
		return err
	}
	if err := ix.blocks(); err != nil {
		return err
	}
	if err := ix.commit(); err != nil {
		return err
	}
	ix.written.Add(uint64(len(ix.pend)))
	ix.pend, ix.refs, ix.raw = ix.pend[:0], ix.refs[:0], ix.raw[:0]
	return nil
}

func encodeIndexState(from, last uint64) []byte {
	b := make([]byte, 4, 20)
	b = binary.LittleEndian.AppendUint64(b, from)
	b = binary.LittleEndian.AppendUint64(b, last)
	sealInPlace(b)
	return b
}

// readIndexState returns the index's first and last transaction, or
// ok=false if the directory has no index state (never on, or off since).
// The last is the "I" record's, or the end of the last block if that is
// further: the Snapshotter's batches write blocks and no "I" (a batch is
// all there or none of it, so its last block marks what it completes).
func readIndexState(db *pebble.DB) (from, last uint64, ok bool, err error) {
	v, closer, err := db.Get(indexStateKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("ledger: read index state: %w", err)
	}
	body, err := openRecord(v)
	if err == nil && len(body) != 16 {
		err = fmt.Errorf("%d-byte value", len(body))
	}
	if err != nil {
		closer.Close()
		return 0, 0, false, &CorruptError{Key: clone(indexStateKey), Reason: "index state: " + err.Error()}
	}
	from, last = binary.LittleEndian.Uint64(body), binary.LittleEndian.Uint64(body[8:])
	closer.Close()
	it, err := prefixIter(db, prefixBlock)
	if err != nil {
		return 0, 0, false, err
	}
	defer it.Close()
	if it.Last() {
		var b block
		if err := b.decode(it.Key(), it.Value()); err != nil {
			return 0, 0, false, err
		}
		last = max(last, b.last())
	}
	return from, last, true, it.Error()
}

// histRecord is a decoded history record.
type histRecord struct {
	account, tx uint64
	kind, side  byte
	cols        [numColumns]int64
	batch       []byte // the transaction (histTransfer)
}

func decodeHistory(k, v []byte) (histRecord, error) {
	if len(k) != 17 || k[0] != prefixHistory {
		return histRecord{}, errors.New("malformed history key")
	}
	body, err := openRecord(v)
	if err != nil {
		return histRecord{}, err
	}
	if len(body) < histHeaderLen-4 {
		return histRecord{}, fmt.Errorf("%d-byte history record", len(body))
	}
	h := histRecord{account: binary.BigEndian.Uint64(k[1:]), tx: binary.BigEndian.Uint64(k[9:]), kind: body[0], side: body[1]}
	for c := range h.cols {
		h.cols[c] = int64(binary.LittleEndian.Uint64(body[2+8*c:]))
	}
	h.batch = body[histHeaderLen-4:]
	switch {
	case h.kind == histOpening && len(h.batch) == 0:
	case h.kind == histTransfer && len(h.batch) >= batchHeaderLen && binary.LittleEndian.Uint64(h.batch[4:]) == h.tx:
	default:
		return histRecord{}, fmt.Errorf("history record of kind %d, %d bytes of transaction", h.kind, len(h.batch))
	}
	return h, nil
}

// transfer decodes the record's transaction into t.
func (h *histRecord) transfer(t *walTx) error {
	br, err := parseBatch(h.batch)
	if err != nil {
		return err
	}
	ok, err := br.next(t)
	if err == nil && !ok {
		err = fmt.Errorf("%w: empty", errBatch)
	}
	return err
}

func beU64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

func appendU64BE(dst []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(dst, v) }
