package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lanework/lanework/ledger/internal/wal"
)

// A block value ("z" + first tx) is one of two kinds, told apart by the
// top bit of its count word:
//
//	reference  CRC32C, u32 count | 1<<31, u32 postings' count, postings (field, value[16]) each,
//	           u64 segment seq, u64 segment first tx, u64 record offset, u32 payload from,
//	           u32 payload length, i64 the batch's base timestamp
//	copy       CRC32C, u32 count, u32 postings' count, postings, count × u32 offset in the
//	           batch, a WAL batch encoding of the transactions (checksum 0)
//
// A reference names the WAL record (group commit) that holds the block's
// transactions, and the payload bytes [from, from+length) of theirs in it
// (the record's type byte is payload byte 0): the Snapshotter writes
// references, since the WAL's own segments, synced and checksummed chunk
// by chunk, are kept under index/wal/ for the index (walfiles.go). A block
// never spans two records. Copies are what a checkpoint carries (the
// receiver has other segments) and what a cut rewrites of one; a store may
// hold both.
const (
	refBlockBit = 1 << 31
	refLen      = 8 + 8 + 8 + 4 + 4 + 8
)

// walRef locates one WAL batch record: what a reference block names. A
// seq of 0 is no record: the encodings are in indexWriter.raw, and the
// block is written as a copy.
type walRef struct {
	seq, segFirst uint64 // its segment (wal.Segment)
	off           int64  // its first chunk's offset in the segment
	last          uint64 // its last transaction (the hand-off's)
	base          int64  // the batch's base timestamp
}

// recordStart is the offset of the record whose reader stopped at off
// (wal.Scan's): the writer pads a block tail too short for a chunk header,
// so the record starts in the next block.
func recordStart(off int64) int64 {
	const block, header = 32 << 10, 19
	if block-off%block < header {
		return off + block - off%block
	}
	return off
}

func appendRef(v []byte, r *walRef, from, n uint32) []byte {
	v = binary.LittleEndian.AppendUint64(v, r.seq)
	v = binary.LittleEndian.AppendUint64(v, r.segFirst)
	v = binary.LittleEndian.AppendUint64(v, uint64(r.off))
	v = binary.LittleEndian.AppendUint32(v, from)
	v = binary.LittleEndian.AppendUint32(v, n)
	return binary.LittleEndian.AppendUint64(v, uint64(r.base))
}

// block is a decoded block value. Its slices alias the value, but span
// and at, which load fills and a later decode reuses.
type block struct {
	first uint64
	count int
	posts []byte // count x {field, value[16]}
	// A copy: each transaction's offset (u32) in batch.
	offs  []byte
	batch []byte
	// A reference: the record and the payload range; load reads the
	// range into span and each transaction's offset in it into at.
	isRef   bool
	ref     walRef
	from, n uint32
	span    []byte
	at      []uint32
	loaded  bool
}

// decode decodes value v of block key k into b; damage is a *CorruptError
// naming the key.
func (b *block) decode(k, v []byte) error {
	if err := b.decodeValue(k, v); err != nil {
		return &CorruptError{Key: clone(k), Reason: "index block: " + err.Error()}
	}
	return nil
}

func (b *block) decodeValue(k, v []byte) error {
	first, ok := parseIDKey(prefixBlock, k)
	if !ok {
		return errors.New("malformed block key")
	}
	body, err := openRecord(v)
	if err != nil {
		return err
	}
	if len(body) < 8 {
		return fmt.Errorf("%d-byte block", len(body))
	}
	cw, np := binary.LittleEndian.Uint32(body), int(binary.LittleEndian.Uint32(body[4:]))
	n := int(cw &^ refBlockBit)
	body = body[8:]
	b.first, b.count, b.isRef, b.loaded = first, n, cw&refBlockBit != 0, false
	if n < 1 || n > blockMax || np > 3*n { // ledger, code, user_data per transfer
		return fmt.Errorf("block of %d transactions, %d postings", n, np)
	}
	if b.isRef {
		if len(body) != np*17+refLen {
			return fmt.Errorf("reference block of %d postings in %d bytes", np, len(body))
		}
		b.posts, body = body[:np*17], body[np*17:]
		b.ref = walRef{seq: binary.LittleEndian.Uint64(body), segFirst: binary.LittleEndian.Uint64(body[8:]),
			off: int64(binary.LittleEndian.Uint64(body[16:])), last: b.last(), base: int64(binary.LittleEndian.Uint64(body[32:]))}
		b.from, b.n = binary.LittleEndian.Uint32(body[24:]), binary.LittleEndian.Uint32(body[28:])
		b.offs, b.batch = nil, nil
		if b.ref.seq == 0 || b.ref.off < 0 || b.from <= batchHeaderLen || b.n < txHeaderLen {
			return fmt.Errorf("reference to segment %d offset %d, payload %d+%d", b.ref.seq, b.ref.off, b.from, b.n)
		}
		return nil
	}
	if len(body) < np*17+n*4+batchHeaderLen {
		return fmt.Errorf("block of %d transactions, %d postings in %d bytes", n, np, len(body))
	}
	b.posts, b.offs, b.batch = body[:np*17], body[np*17:np*17+n*4], body[np*17+n*4:]
	if binary.LittleEndian.Uint64(b.batch[4:]) != first || int(binary.LittleEndian.Uint32(b.batch[12:])) != n {
		return errors.New("block header does not match its key")
	}
	return nil
}

func (b *block) last() uint64 { return b.first + uint64(b.count) - 1 }

// load reads a reference block's transactions from its kept segment and
// checks them (the chunks' CRCs, and every transaction decodes); nothing
// for a copy. Damage, or a segment missing, is a *CorruptError naming the
// segment's file and offset.
func (b *block) load(kept *keptSegments) error {
	if !b.isRef || b.loaded {
		return nil
	}
	var err error
	if b.span, err = kept.read(&b.ref, b.from, b.n, b.span[:0]); err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			ce.FirstTx, ce.LastTx = TxID(b.first), TxID(b.last())
		}
		return err
	}
	br := b.reader()
	b.at = b.at[:0]
	var t walTx
	for {
		at := br.off
		more, err := br.next(&t)
		if err != nil || !more {
			if err != nil {
				return &CorruptError{File: kept.rel(&b.ref), Offset: wal.PayloadOffset(b.ref.off, int64(b.from)+int64(at)),
					FirstTx: TxID(b.first), LastTx: TxID(b.last()), Reason: "index block's transactions: " + err.Error()}
			}
			break
		}
		b.at = append(b.at, uint32(at))
	}
	b.loaded = true
	return nil
}

// reader iterates a loaded reference block's transactions.
func (b *block) reader() batchReader {
	return batchReader{data: b.span, first: b.first, count: uint64(b.count), base: b.ref.base}
}

// tx decodes transaction id of the block (loaded, if a reference) into t.
func (b *block) tx(id uint64, t *walTx) error {
	i := int(id - b.first)
	var br batchReader
	if b.isRef {
		if !b.loaded {
			return errors.New("reference block not loaded")
		}
		br = b.reader()
		br.off, br.i = int(b.at[i]), uint64(i)
	} else {
		var err error
		if br, err = parseBatch(b.batch); err != nil {
			return err
		}
		br.off, br.i = int(binary.LittleEndian.Uint32(b.offs[i*4:])), uint64(i)
		if br.off < batchHeaderLen || br.off > len(b.batch) {
			return fmt.Errorf("%w: tx %d at offset %d", errBatch, id, br.off)
		}
	}
	ok, err := br.next(t)
	if err == nil && !ok {
		err = fmt.Errorf("%w: tx %d missing", errBatch, id)
	}
	return err
}

// encodings returns the loaded block's transactions' encodings, and each
// one's offset in them (a reference's at, a copy's offs less its header).
func (b *block) encodings(at []uint32) ([]byte, []uint32) {
	at = at[:0]
	if b.isRef {
		return b.span, append(at, b.at...)
	}
	for i := range b.count {
		at = append(at, binary.LittleEndian.Uint32(b.offs[i*4:])-batchHeaderLen)
	}
	return b.batch[batchHeaderLen:], at
}

// appendCopy appends the value of the loaded block b as a copy: what a
// checkpoint carries of a reference block.
func (b *block) appendCopy(v []byte) []byte {
	v = append(v, 0, 0, 0, 0)
	v = binary.LittleEndian.AppendUint32(v, uint32(b.count))
	v = binary.LittleEndian.AppendUint32(v, uint32(len(b.posts)/17))
	v = append(v, b.posts...)
	if b.isRef {
		for _, a := range b.at {
			v = binary.LittleEndian.AppendUint32(v, batchHeaderLen+a)
		}
		v = appendBatchHeader(v, b.first, uint32(b.count), b.ref.base)
		v = append(v, b.span...)
	} else {
		v = append(append(v, b.offs...), b.batch...)
	}
	sealInPlace(v)
	return v
}
