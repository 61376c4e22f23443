package ledger

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// recovered is the state Open starts the pipeline from.
type recovered struct {
	last     uint64     // last durable transaction
	snapshot uint64     // tx id of the snapshot loaded (0 if none)
	bal      []int64    // balances after last
	dedup    *dedup     // Transactor's dedup index after last
	refs     []refEntry // the dedup window after last, for the Snapshotter
	replayed uint64     // WAL transactions replayed
	torn     []byte     // key of a discarded torn tail batch, if any
}

// recoveryInfo records what Open recovered, for tests and tools.
type recoveryInfo struct {
	last, snapshot, replayed uint64
	torn                     []byte
}

// recoverState loads the newest valid snapshot and replays the WAL after it.
//
// Rules: every batch's CRC and structure are verified, and every entry's
// resulting balance must equal the replayed balance plus its delta. A batch
// that fails and is the last WAL key is a torn tail: it is deleted (synced)
// and recovery ends before it. A failing batch followed by another, a gap or
// overlap in ids, or a non-zero balance sum refuses to open with a
// *CorruptError naming the key and tx range.
func recoverState(db *pebble.DB, cfg *Config) (*recovered, error) {
	rs := &recovered{bal: make([]int64, cfg.MaxAccounts), dedup: newDedup(cfg.DedupWindow)}
	if err := loadNewestSnapshot(db, cfg, rs); err != nil {
		return nil, err
	}
	if err := replayWAL(db, cfg, rs); err != nil {
		return nil, err
	}
	var sum int64
	for _, b := range rs.bal {
		sum += b // wrapping: a true sum of zero wraps to zero
	}
	if sum != 0 {
		return nil, &CorruptError{Key: []byte{prefixWAL}, LastTx: TxID(rs.last), Reason: fmt.Sprintf("balances sum to %d after replay", sum)}
	}
	// The Snapshotter's window is the Transactor's, in id order.
	rs.dedup.fifo.trim(rs.last+1, rs.dedup.forget)
	rs.refs = rs.dedup.fifo.entries()
	return rs, nil
}

func loadNewestSnapshot(db *pebble.DB, cfg *Config, rs *recovered) error {
	it, err := prefixIter(db, prefixSnapshot)
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.Last(); ok; ok = it.Prev() {
		id, ok := parseIDKey(prefixSnapshot, it.Key())
		if !ok {
			continue
		}
		if err := loadSnapshot(db, cfg, id, it.Value(), rs); err == nil {
			return nil
		}
		// An invalid snapshot is skipped: the previous one, and the WAL
		// retained after it, reproduce the same state.
	}
	return it.Error()
}

func loadSnapshot(db *pebble.DB, cfg *Config, id uint64, val []byte, rs *recovered) error {
	m, err := decodeManifest(val)
	if err != nil {
		return err
	}
	if m.TxID != id || m.MaxAccounts != cfg.MaxAccounts || m.ChunkAccounts != snapChunkAccounts ||
		uint64(m.Chunks) != (cfg.MaxAccounts+snapChunkAccounts-1)/snapChunkAccounts {
		return errors.New("manifest does not match")
	}
	bal := make([]int64, cfg.MaxAccounts)
	var sum int64
	for i := uint32(0); i < m.Chunks; i++ {
		v, closer, err := db.Get(chunkKey(id, i))
		if err != nil {
			return err
		}
		err = decodeBalanceChunk(v, uint64(i)*snapChunkAccounts, bal)
		closer.Close()
		if err != nil {
			return err
		}
	}
	for _, b := range bal {
		sum += b
	}
	if sum != 0 {
		return errors.New("snapshot balances do not sum to zero")
	}
	v, closer, err := db.Get(chunkKey(id, refsChunk))
	if err != nil {
		return err
	}
	refs, err := decodeRefsChunk(v)
	closer.Close()
	if err != nil {
		return err
	}
	if uint64(len(refs)) != m.Refs {
		return errors.New("refs count does not match manifest")
	}
	d := newDedup(cfg.DedupWindow)
	for i, r := range refs {
		if r.id > id || r.ref == 0 || (i > 0 && r.id <= refs[i-1].id) {
			return errors.New("refs out of order")
		}
		d.add(r.id, r.ref)
	}
	rs.bal, rs.dedup, rs.last, rs.snapshot = bal, d, id, id
	return nil
}

func replayWAL(db *pebble.DB, cfg *Config, rs *recovered) error {
	it, err := prefixIter(db, prefixWAL)
	if err != nil {
		return err
	}
	defer it.Close()
	// The batch holding last+1 may start at or before last.
	ok := it.SeekLT(idKey(prefixWAL, rs.last+2))
	if !ok {
		ok = it.First()
	}
	var t walTx
	for ; ok; ok = it.Next() {
		key := it.Key()
		first, kok := parseIDKey(prefixWAL, key)
		b, err := openBatch(it.Value())
		if err == nil && (!kok || b.first != first) {
			err = fmt.Errorf("key names tx %d, batch starts at %d", first, b.first)
		}
		if err == nil && b.last() <= rs.last {
			continue // entirely covered by the snapshot
		}
		if err == nil && first > rs.last+1 {
			return &CorruptError{Key: clone(key), FirstTx: TxID(rs.last + 1), LastTx: TxID(first - 1), Reason: "transactions missing from the WAL"}
		}
		if err == nil {
			if err := replayBatch(&b, &t, rs); err != nil {
				// The checksum held, so this is no torn write.
				return &CorruptError{Key: clone(key), FirstTx: TxID(b.first), LastTx: TxID(b.last()), Reason: err.Error()}
			}
			continue
		}
		k := clone(key)
		if it.Next() {
			next, _ := parseIDKey(prefixWAL, it.Key())
			return &CorruptError{Key: k, FirstTx: TxID(first), LastTx: TxID(next - 1), Reason: err.Error()}
		}
		if ierr := it.Error(); ierr != nil {
			return ierr
		}
		if kok && first <= rs.last {
			// The snapshot after it proves this batch was synced: damage,
			// not a torn write, and deleting it would lose its history.
			return &CorruptError{Key: k, FirstTx: TxID(first), LastTx: TxID(rs.last), Reason: fmt.Sprintf("%v (covered by snapshot %d, so not a torn write)", err, rs.snapshot)}
		}
		// Torn tail: discard it, durably, so that new ids reuse its range.
		if derr := db.Delete(k, pebble.Sync); derr != nil {
			return derr
		}
		rs.torn = k
		return nil
	}
	return it.Error()
}

// replayBatch applies the transactions of b after rs.last. It checks
// everything before changing rs, per transaction.
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
		for i := 0; i < t.n; i++ {
			if e := t.entry(i); e.Account >= n {
				return fmt.Errorf("tx %d: account %d out of range", t.id, e.Account)
			}
		}
		// Entries of one tx may repeat an account: verify while applying,
		// and undo on mismatch.
		for i := 0; i < t.n; i++ {
			e := t.entry(i)
			nb, ok := addInt64(rs.bal[e.Account], e.Delta)
			if !ok || nb != e.Balance {
				for j := i - 1; j >= 0; j-- {
					p := t.entry(j)
					rs.bal[p.Account] -= p.Delta
				}
				return fmt.Errorf("tx %d: account %d balance %d%+d recorded as %d", t.id, e.Account, rs.bal[e.Account], e.Delta, e.Balance)
			}
			rs.bal[e.Account] = nb
		}
		if t.userRef != 0 && t.fail != Duplicate {
			rs.dedup.fifo.trim(t.id, rs.dedup.forget)
			rs.dedup.add(t.id, t.userRef)
		}
		rs.last = t.id
		rs.replayed++
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
