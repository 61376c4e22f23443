package ledger

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
)

// snapChunkAccounts is how many cells (four per account) one snapshot
// chunk holds.
const snapChunkAccounts = 1 << 16

// refsChunk is the chunk number of the dedup window, pendingChunk that of
// the pending book (manifest version 4 on).
const (
	refsChunk    = math.MaxUint32
	pendingChunk = math.MaxUint32 - 1
)

// Snapshot chunk layouts (sealed with a CRC32C prefix like every record):
//
//	cells: u64 first cell, u32 count, count x uvarint cell
//	refs:  u32 count, count x { u64 tx id, u64 UserRef }
//
// Cells are columns, in [0, 2^63): as uvarints the zeros of the pending
// columns take a byte each and a posted column its significant bytes, so a
// snapshot of four columns is about the size of one of eight-byte balances.
// The encoders reuse dst and seal in place: the persister encodes every
// cell of every account at each snapshot, so a copy or an allocation per
// chunk shows in its CPU per transaction.
func encodeCellChunk(dst []byte, first uint64, cells []int64) []byte {
	dst = startCellChunk(dst, first, len(cells))
	for _, v := range cells {
		dst = binary.AppendUvarint(dst, uint64(v))
	}
	sealInPlace(dst)
	return dst
}

// encodeCellChunkFrom is encodeCellChunk reading the cells with atomic
// loads: the persister encodes straight from the readable cells while the
// Snapshotter keeps storing them (a fuzzy snapshot).
func encodeCellChunkFrom(dst []byte, first uint64, cells []atomic.Int64) []byte {
	dst = startCellChunk(dst, first, len(cells))
	for i := range cells {
		dst = binary.AppendUvarint(dst, uint64(cells[i].Load()))
	}
	sealInPlace(dst)
	return dst
}

// startCellChunk returns dst emptied, with room for the seal, the header
// and n cells of the longest uvarint.
func startCellChunk(dst []byte, first uint64, n int) []byte {
	dst = slices.Grow(dst[:0], 4+12+binary.MaxVarintLen64*n)
	dst = append(dst, 0, 0, 0, 0) // the seal
	dst = binary.LittleEndian.AppendUint64(dst, first)
	return binary.LittleEndian.AppendUint32(dst, uint32(n))
}

// decodeCellChunk checks a chunk against the cell it must start at and the
// number it must hold, and appends its cells to out.
func decodeCellChunk(val []byte, wantFirst, wantCount uint64, out []int64) ([]int64, error) {
	b, err := openRecord(val)
	if err != nil {
		return out, err
	}
	if len(b) < 12 {
		return out, fmt.Errorf("chunk of %d bytes", len(b))
	}
	first, n := binary.LittleEndian.Uint64(b), uint64(binary.LittleEndian.Uint32(b[8:]))
	if first != wantFirst || n != wantCount {
		return out, fmt.Errorf("chunk header first=%d count=%d, want first=%d count=%d", first, n, wantFirst, wantCount)
	}
	b = b[12:]
	for i := uint64(0); i < n; i++ {
		v, k := binary.Uvarint(b)
		if k <= 0 || v > maxColumn {
			return out, fmt.Errorf("cell %d: bad value", first+i)
		}
		out = append(out, int64(v))
		b = b[k:]
	}
	if len(b) != 0 {
		return out, fmt.Errorf("chunk has %d bytes after its cells", len(b))
	}
	return out, nil
}

func encodeRefsChunk(refs []refEntry) []byte {
	dst := make([]byte, 0, 4+16*len(refs))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(refs)))
	for _, r := range refs {
		dst = binary.LittleEndian.AppendUint64(dst, r.id)
		dst = binary.LittleEndian.AppendUint64(dst, r.ref)
	}
	return sealRecord(dst)
}

func decodeRefsChunk(val []byte) ([]refEntry, error) {
	b, err := openRecord(val)
	if err != nil {
		return nil, err
	}
	if len(b) < 4 {
		return nil, fmt.Errorf("refs chunk of %d bytes", len(b))
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	if uint64(len(b)-4) != 16*n {
		return nil, fmt.Errorf("refs chunk count %d for %d bytes", n, len(b))
	}
	refs := make([]refEntry, n)
	for i := range refs {
		refs[i] = refEntry{id: binary.LittleEndian.Uint64(b[4+16*i:]), ref: binary.LittleEndian.Uint64(b[12+16*i:])}
	}
	return refs, nil
}

// An account record ("A" + first slot) holds the immutable part of the
// accounts of consecutive slots from its first, each in the WAL's 32-byte
// create_account layout, sealed. The Snapshotter writes one for each batch
// that created accounts, when it applies the batch (unsynced: the next
// snapshot's synced manifest, later in pebble's log, makes it durable), so
// snapshots carry no account metadata; Open writes those of the creations
// it replays. One record per batch rather than per account: pebble's cost
// (memtable, flush, compactions) is per key. Directories written before
// held one account per record, which reads the same way.
func encodeAccountRecord(ms ...acctMeta) []byte {
	b := make([]byte, 0, accountLen*len(ms))
	for _, m := range ms {
		b = appendAccount(b, m)
	}
	return sealRecord(b)
}

// decodeAccountRecord returns the accounts of an account record.
func decodeAccountRecord(val []byte) ([]acctMeta, error) {
	b, err := openRecord(val)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 || len(b)%accountLen != 0 {
		return nil, fmt.Errorf("account record of %d bytes", len(b))
	}
	ms := make([]acctMeta, len(b)/accountLen)
	for i := range ms {
		ms[i] = decodeAccount(b[i*accountLen:])
	}
	return ms, nil
}
