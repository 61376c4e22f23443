package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lanework/lanework/ledger/internal/wal"
)

// recovered is the state Open starts the pipeline from.
type recovered struct {
	last     uint64         // last durable transaction
	snapshot uint64         // tx id S0 of the snapshot loaded (0 if none)
	snapEnd  uint64         // its TxEnd S1: the WAL replays it exactly from there on
	bal      []atomic.Int64 // balances after last: they become the readable balances
	dedup    *dedup         // Transactor's dedup index after last
	refs     []refEntry     // the dedup window after last, for the Snapshotter
	// replayedRefs are the refs of the transactions replayed after the
	// snapshot, for the durable index (loadRefIndex).
	replayedRefs []refUse
	replayed     uint64        // WAL transactions replayed
	torn         *TornTail     // the torn tail dropped, if any
	segs         []wal.Segment // live WAL segments, oldest first
	unborn       string        // a newest segment whose creation a crash cut short
	hash         uint64        // chain of every batch's checksum (replicate.go)
	// win tracks, while the replay is inside the loaded snapshot's window
	// (snapshot, snapEnd], every account an entry touched: its chunk value,
	// and whether that value was one of the account's balances in the window.
	win map[uint64]winAcct
}

type winAcct struct {
	chunk   int64
	matched bool
}

// recoveryInfo records what Open recovered, for tests and tools.
type recoveryInfo struct {
	last, snapshot, snapEnd, replayed uint64
	torn                              *TornTail
}

// recoverState loads the newest valid snapshot and replays the WAL after it.
//
// Rules: the WAL is read by wal.Scan's rules (see package wal: only a torn
// tail of the newest segment is dropped; any other damage is a
// *CorruptError naming file, offset and tx range), every batch's CRC and
// structure are verified, and every entry's resulting balance must equal the
// replayed balance plus its delta, except for an account's first entry
// inside the snapshot's window (below), which sets it. A torn tail the
// snapshot's window reaches was synced before the manifest: damage. A gap
// in ids or a non-zero balance sum refuses too. recoverState writes nothing.
//
// A snapshot is fuzzy: its chunks were read while the Snapshotter applied
// (S0, S1], so an account's chunk value is its balance after S0 or after one
// of its entries in (S0, S1]. Replaying (S0, S1] by setting each entry's
// resulting balance (idempotent) leaves every account that has an entry there
// at its last one, and every other account did not change during the copy,
// so its chunk value is right: the state after S1 is exact. The replay also
// checks that each such account's chunk value was one of its balances in the
// window and that the balances sum to zero after S1.
func recoverState(db *pebble.DB, cfg *Config) (*recovered, error) {
	rs := &recovered{bal: make([]atomic.Int64, cfg.MaxAccounts), dedup: newDedup(cfg.DedupWindow)}
	if err := loadNewestSnapshot(db, cfg, rs); err != nil {
		return nil, err
	}
	if err := replayWAL(db, cfg, rs); err != nil {
		return nil, err
	}
	if rs.last < rs.snapEnd {
		return nil, &CorruptError{Key: idKey(prefixSnapshot, rs.snapshot), FirstTx: TxID(rs.last + 1), LastTx: TxID(rs.snapEnd),
			Reason: fmt.Sprintf("transactions missing from the WAL: snapshot %d holds balances up to tx %d", rs.snapshot, rs.snapEnd)}
	}
	if sum := sumBalances(rs.bal); sum != 0 {
		return nil, &CorruptError{File: walDir, LastTx: TxID(rs.last), Reason: fmt.Sprintf("balances sum to %d after replay", sum)}
	}
	// The Snapshotter's window is the Transactor's, in id order.
	rs.dedup.fifo.trim(rs.last+1, rs.dedup.forget)
	rs.refs = rs.dedup.fifo.entries()
	return rs, nil
}

// sumBalances adds the balances, wrapping: a true sum of zero wraps to zero.
func sumBalances(bal []atomic.Int64) int64 {
	var sum int64
	for i := range bal {
		sum += bal[i].Load()
	}
	return sum
}

func loadNewestSnapshot(db *pebble.DB, cfg *Config, rs *recovered) error {
	it, err := prefixIter(db, prefixSnapshot)
	if err != nil {
		return err
	}
	defer it.Close()
	put := func(first uint64, raw []byte) {
		for i := 0; i < len(raw)/8; i++ {
			rs.bal[first+uint64(i)].Store(int64(binary.LittleEndian.Uint64(raw[8*i:])))
		}
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		id, ok := parseIDKey(prefixSnapshot, it.Key())
		if !ok {
			continue
		}
		info, err := readSnapshot(db, cfg.MaxAccounts, id, it.Value(), put)
		if err == nil {
			d := newDedup(cfg.DedupWindow)
			for _, r := range info.refs {
				d.add(r.id, r.ref)
			}
			rs.dedup, rs.last, rs.snapshot, rs.snapEnd = d, id, id, info.end
			if info.end > id {
				rs.win = make(map[uint64]winAcct)
			}
			return nil
		}
		// An invalid snapshot is skipped: the previous one, and the WAL
		// retained after it, reproduce the same state. It may have stored
		// some of its chunks: every chunk of the next one overwrites them,
		// and without one the replay starts from zero.
		for i := range rs.bal {
			rs.bal[i].Store(0)
		}
	}
	return it.Error()
}

// snapInfo is what a valid snapshot's manifest and dedup chunk say.
type snapInfo struct {
	end  uint64 // TxEnd (S1); equal to the id for an exact snapshot
	refs []refEntry
}

// readSnapshot checks snapshot id as Open loads it — the manifest, every
// balance chunk (checksum, header, full coverage of maxAccounts), the dedup
// window, and for an exact snapshot (format 1, or TxEnd equal to its id) the
// zero balance sum — and passes each chunk's balances to put as they are
// read (8 little-endian bytes each, from account first on). An error may
// come after some chunks were passed.
func readSnapshot(db *pebble.DB, maxAccounts, id uint64, val []byte, put func(first uint64, raw []byte)) (snapInfo, error) {
	m, err := decodeManifest(val)
	if err != nil {
		return snapInfo{}, err
	}
	end := m.TxEnd
	switch m.FormatVersion {
	case manifestVersionV1:
		end = m.TxID
	case manifestVersion:
	default:
		return snapInfo{}, fmt.Errorf("manifest format version %d", m.FormatVersion)
	}
	if m.TxID != id || end < id || m.MaxAccounts != maxAccounts || m.ChunkAccounts != snapChunkAccounts ||
		uint64(m.Chunks) != (maxAccounts+snapChunkAccounts-1)/snapChunkAccounts {
		return snapInfo{}, errors.New("manifest does not match")
	}
	var sum int64
	for i := uint32(0); i < m.Chunks; i++ {
		v, closer, err := db.Get(chunkKey(id, i))
		if err != nil {
			return snapInfo{}, err
		}
		first := uint64(i) * snapChunkAccounts
		raw, err := openBalanceChunk(v, first, maxAccounts)
		if err == nil && uint64(len(raw)/8) != min(snapChunkAccounts, maxAccounts-first) {
			err = fmt.Errorf("chunk %d holds %d balances", i, len(raw)/8)
		}
		if err == nil {
			for j := 0; j < len(raw); j += 8 {
				sum += int64(binary.LittleEndian.Uint64(raw[j:]))
			}
			put(first, raw)
		}
		closer.Close()
		if err != nil {
			return snapInfo{}, err
		}
	}
	if end == id && sum != 0 {
		return snapInfo{}, errors.New("snapshot balances do not sum to zero")
	}
	v, closer, err := db.Get(chunkKey(id, refsChunk))
	if err != nil {
		return snapInfo{}, err
	}
	refs, err := decodeRefsChunk(v)
	closer.Close()
	if err != nil {
		return snapInfo{}, err
	}
	if uint64(len(refs)) != m.Refs {
		return snapInfo{}, errors.New("refs count does not match manifest")
	}
	for i, r := range refs {
		if r.id > id || r.ref == 0 || (i > 0 && r.id <= refs[i-1].id) {
			return snapInfo{}, errors.New("refs out of order")
		}
	}
	return snapInfo{end: end, refs: refs}, nil
}

// replayWAL scans the WAL (wal.Scan's rules) and replays every batch after
// rs.last. It reads only.
func replayWAL(db *pebble.DB, cfg *Config, rs *recovered) error {
	bounds, err := readBounds(db)
	if err != nil {
		return err
	}
	var t walTx
	// Every segment is read in full, below the snapshot too: the same
	// rules as Verify, whatever the snapshot covers.
	res, err := wal.Scan(walOptions(cfg, nil), bounds, 0, func(seg wal.Segment, off int64, p []byte) error {
		b, err := parseBatch(p) // Scan verified its checksum
		if err != nil {
			return err
		}
		rs.hash = chainBatch(rs.hash, p) // replicate.go
		if b.last() <= rs.last {
			return nil
		}
		if b.first > rs.last+1 {
			return &CorruptError{File: walDir + "/" + seg.Name(), Offset: off, FirstTx: TxID(rs.last + 1), LastTx: TxID(b.first - 1), Reason: "transactions missing from the WAL"}
		}
		if err := replayBatch(&b, &t, rs); err != nil {
			var ce *CorruptError
			if errors.As(err, &ce) {
				return err // the snapshot's window does not replay
			}
			// The checksums held, so this is no torn write.
			return &CorruptError{File: walDir + "/" + seg.Name(), Offset: off, FirstTx: TxID(b.first), LastTx: TxID(b.last()), Reason: err.Error()}
		}
		return nil
	})
	if err != nil {
		return walError(err)
	}
	rs.segs, rs.torn, rs.unborn = res.Segments, tornTail(res.Torn), res.Unborn
	if len(res.Segments) == 0 {
		return nil
	}
	if tt := rs.torn; tt != nil && uint64(tt.LastKept) < rs.snapEnd {
		// The snapshot proves the torn record was synced (its manifest was
		// written after every transaction up to its TxEnd was durable):
		// damage, not a torn write.
		return &CorruptError{File: tt.File, Offset: tt.Offset, FirstTx: tt.LastKept + 1, LastTx: TxID(rs.snapEnd),
			Reason: fmt.Sprintf("damaged record covered by snapshot %d, so not a torn write", rs.snapshot)}
	}
	if res.First > rs.last+1 {
		return &CorruptError{File: walDir + "/" + res.Segments[0].Name(), FirstTx: TxID(rs.last + 1), LastTx: TxID(res.First - 1),
			Reason: fmt.Sprintf("transactions missing from the WAL: it starts at tx %d, the snapshot ends at tx %d", res.First, rs.last)}
	}
	if res.Last < rs.last {
		seg := res.Segments[len(res.Segments)-1]
		return &CorruptError{File: walDir + "/" + seg.Name(), FirstTx: TxID(res.Last + 1), LastTx: TxID(rs.last),
			Reason: fmt.Sprintf("the WAL ends at tx %d, before snapshot %d", res.Last, rs.snapshot)}
	}
	return nil
}

// replayBatch applies the transactions of b after rs.last. Outside the
// snapshot's window it checks every entry before changing rs, per
// transaction; inside it, an error (always fatal) may leave rs half changed.
func replayBatch(b *batchReader, t *walTx, rs *recovered) error {
	n := uint64(len(rs.bal))
	for {
		ok, err := b.next(t)
		if err != nil || !ok {
			return err
		}
		if t.id <= rs.last {
			continue
		}
		if t.id != rs.last+1 {
			return fmt.Errorf("tx %d follows %d", t.id, rs.last)
		}
		if t.id <= rs.snapEnd {
			for i := 0; i < t.n; i++ {
				if e := t.entry(i); e.Account >= n {
					return fmt.Errorf("tx %d: account %d out of range", t.id, e.Account)
				}
			}
			if err := replayWindowTx(t, rs); err != nil {
				return err
			}
		} else {
			// Entries of one tx may repeat an account: verify while
			// applying, and undo on a bad account or balance.
			for i := 0; i < t.n; i++ {
				e := t.entry(i)
				var err error
				if e.Account >= n {
					err = fmt.Errorf("tx %d: account %d out of range", t.id, e.Account)
				} else if cur := rs.bal[e.Account].Load(); true {
					if nb, ok := addInt64(cur, e.Delta); ok && nb == e.Balance {
						rs.bal[e.Account].Store(nb)
						continue
					}
					err = fmt.Errorf("tx %d: account %d balance %d%+d recorded as %d", t.id, e.Account, cur, e.Delta, e.Balance)
				}
				for j := i - 1; j >= 0; j-- {
					p := t.entry(j)
					rs.bal[p.Account].Add(-p.Delta)
				}
				return err
			}
		}
		if t.userRef != 0 && t.fail != Duplicate {
			rs.dedup.fifo.trim(t.id, rs.dedup.forget)
			rs.dedup.add(t.id, t.userRef)
			rs.replayedRefs = append(rs.replayedRefs, refUse{id: t.id, ref: t.userRef, ts: t.ts})
		}
		rs.last = t.id
		rs.replayed++
		if rs.last == rs.snapEnd && rs.win != nil {
			if err := finishWindow(rs); err != nil {
				return err
			}
		}
	}
}

// replayWindowTx applies a transaction inside the loaded snapshot's window
// by setting each entry's resulting balance. An account's first entry in the
// window cannot be checked against its chunk value (the chunk may have been
// read after later entries); it records whether the chunk value was the
// account's balance before the entry or after it. Later entries check as
// outside the window, and may match the chunk value too.
func replayWindowTx(t *walTx, rs *recovered) error {
	for i := 0; i < t.n; i++ {
		e := t.entry(i)
		st, seen := rs.win[e.Account]
		if !seen {
			prev, ok := subInt64(e.Balance, e.Delta)
			if !ok {
				return fmt.Errorf("tx %d: account %d balance %d recorded after delta %+d", t.id, e.Account, e.Balance, e.Delta)
			}
			st.chunk = rs.bal[e.Account].Load()
			st.matched = st.chunk == prev || st.chunk == e.Balance
		} else {
			cur := rs.bal[e.Account].Load()
			if nb, ok := addInt64(cur, e.Delta); !ok || nb != e.Balance {
				return fmt.Errorf("tx %d: account %d balance %d%+d recorded as %d", t.id, e.Account, cur, e.Delta, e.Balance)
			}
			st.matched = st.matched || st.chunk == e.Balance
		}
		rs.win[e.Account] = st
		rs.bal[e.Account].Store(e.Balance)
	}
	return nil
}

// finishWindow runs once the replay reaches the snapshot's TxEnd: every
// account touched in the window must have had its chunk value at some point
// of it, and the balances, now exact, must sum to zero.
func finishWindow(rs *recovered) error {
	key := idKey(prefixSnapshot, rs.snapshot)
	for a, st := range rs.win {
		if !st.matched {
			return &CorruptError{Key: key, FirstTx: TxID(rs.snapshot + 1), LastTx: TxID(rs.snapEnd),
				Reason: fmt.Sprintf("account %d is %d in snapshot %d, never its balance in txs %d..%d", a, st.chunk, rs.snapshot, rs.snapshot+1, rs.snapEnd)}
		}
	}
	rs.win = nil
	if sum := sumBalances(rs.bal); sum != 0 {
		return &CorruptError{Key: key, FirstTx: TxID(rs.snapshot + 1), LastTx: TxID(rs.snapEnd),
			Reason: fmt.Sprintf("balances sum to %d after replaying snapshot %d through tx %d", sum, rs.snapshot, rs.snapEnd)}
	}
	return nil
}

// subInt64 returns a-b and whether it did not overflow.
func subInt64(a, b int64) (int64, bool) {
	s := a - b
	return s, (a^b)&(a^s) >= 0
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
