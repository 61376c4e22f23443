package ledger

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"
)

// snapChunkAccounts is how many balances one snapshot chunk holds.
const snapChunkAccounts = 1 << 16

// refsChunk is the chunk number of the dedup window.
const refsChunk = math.MaxUint32

// Snapshot chunk layouts (sealed with a CRC32C prefix like every record):
//
//	balances: u64 first account, u32 count, count x i64 balance (little-endian)
//	refs:     u32 count, count x { u64 tx id, u64 UserRef }
func encodeBalanceChunk(dst []byte, first uint64, bal []int64) []byte {
	dst = dst[:0]
	dst = binary.LittleEndian.AppendUint64(dst, first)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(bal)))
	for _, b := range bal {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(b))
	}
	return sealRecord(dst)
}

// encodeBalanceChunkFrom is encodeBalanceChunk reading the balances with
// atomic loads: the persister encodes straight from the readable balances
// while the Snapshotter keeps storing them (a fuzzy snapshot).
func encodeBalanceChunkFrom(dst []byte, first uint64, bal []atomic.Int64) []byte {
	dst = dst[:0]
	dst = binary.LittleEndian.AppendUint64(dst, first)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(bal)))
	for i := range bal {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(bal[i].Load()))
	}
	return sealRecord(dst)
}

// openBalanceChunk checks a chunk against the account it must start at and
// the number of accounts, and returns its balances' bytes (8 per balance).
func openBalanceChunk(val []byte, wantFirst, accounts uint64) ([]byte, error) {
	b, err := openRecord(val)
	if err != nil {
		return nil, err
	}
	if len(b) < 12 {
		return nil, fmt.Errorf("chunk of %d bytes", len(b))
	}
	first, n := binary.LittleEndian.Uint64(b), uint64(binary.LittleEndian.Uint32(b[8:]))
	if first != wantFirst || uint64(len(b)-12) != 8*n || first > accounts || n > accounts-first {
		return nil, fmt.Errorf("chunk header first=%d count=%d, want first=%d", first, n, wantFirst)
	}
	return b[12:], nil
}

// decodeBalanceChunk checks a chunk and copies its balances into bal at
// their accounts.
func decodeBalanceChunk(val []byte, wantFirst uint64, bal []int64) error {
	b, err := openBalanceChunk(val, wantFirst, uint64(len(bal)))
	if err != nil {
		return err
	}
	for i := 0; i < len(b)/8; i++ {
		bal[wantFirst+uint64(i)] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return nil
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

// acctChunkBase is the chunk number of a snapshot's first accounts chunk;
// chunk acctChunkBase+i holds slots 1+i*snapChunkAccounts on.
const acctChunkBase = 1 << 31

// accounts chunk layout: u64 first slot, u32 count, count x 32-byte account
// (the WAL's create_account layout).
func encodeAccountChunk(dst []byte, first uint64, meta []acctMeta) []byte {
	dst = dst[:0]
	dst = binary.LittleEndian.AppendUint64(dst, first)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(meta)))
	for _, m := range meta {
		dst = appendAccount(dst, m)
	}
	return sealRecord(dst)
}

// decodeAccountChunk checks a chunk against the slot it must start at and
// the number it must hold, and calls put for each account in slot order.
func decodeAccountChunk(val []byte, wantFirst, wantCount uint64, put func(acctMeta) error) error {
	b, err := openRecord(val)
	if err != nil {
		return err
	}
	if len(b) < 12 {
		return fmt.Errorf("accounts chunk of %d bytes", len(b))
	}
	first, n := binary.LittleEndian.Uint64(b), uint64(binary.LittleEndian.Uint32(b[8:]))
	if first != wantFirst || n != wantCount || uint64(len(b)-12) != accountLen*n {
		return fmt.Errorf("accounts chunk header first=%d count=%d, want first=%d count=%d", first, n, wantFirst, wantCount)
	}
	for i := uint64(0); i < n; i++ {
		if err := put(decodeAccount(b[12+accountLen*i:])); err != nil {
			return err
		}
	}
	return nil
}
