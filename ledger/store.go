package ledger

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// quietLogger drops pebble's informational messages; errors still reach the
// standard logger.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	pebble.DefaultLogger.Errorf(format, args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	pebble.DefaultLogger.Fatalf(format, args...)
}

// corruptionListener returns pebble's corruption report to the read that
// found it: by default pebble's Logger.Fatalf ends the process.
func corruptionListener() *pebble.EventListener {
	return &pebble.EventListener{DataCorruption: func(pebble.DataCorruptionInfo) {}}
}

// pebbleOptions are the options the engine opens pebble with.
func pebbleOptions(cfg *Config) *pebble.Options {
	opts := &pebble.Options{
		FS:            cfg.FS,
		Logger:        quietLogger{},
		EventListener: corruptionListener(),
		// Snapshot chunks arrive as large values; a large memtable keeps
		// flushes rare.
		MemTableSize:                32 << 20,
		MemTableStopWritesThreshold: 4,
	}
	// CPU, not disk, is what two cores run out of.
	opts.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	return opts
}

// writeMeta writes the meta record of the current format, synced.
func writeMeta(db *pebble.DB, cfg *Config, created int64) error {
	rec, err := encodeMsgpack(meta{FormatVersion: formatVersion, MaxAccounts: cfg.MaxAccounts,
		Fingerprint: fingerprint(cfg.MaxAccounts), CreatedUnixNs: created})
	if err != nil {
		return err
	}
	if err := db.Set(metaKey, rec, pebble.Sync); err != nil {
		return fmt.Errorf("ledger: write meta: %w", err)
	}
	return nil
}

// checkMeta checks the meta record of an existing directory against cfg.
// It returns nil for a store that holds no key and a directory without WAL
// segments (one whose first Open stopped before it wrote the meta record).
func checkMeta(db *pebble.DB, cfg *Config) (*meta, error) {
	_, closer, err := db.Get(metaKey)
	if errors.Is(err, pebble.ErrNotFound) {
		nonEmpty, err := hasKeys(db)
		if err != nil {
			return nil, err
		}
		segs, _, err := listSegments(cfg.FS, cfg.Dir)
		if err != nil {
			return nil, err
		}
		if nonEmpty || len(segs) > 0 {
			return nil, &CorruptError{Key: metaKey, Reason: fmt.Sprintf("meta record missing from a directory with records (%t) or WAL segments (%d)", nonEmpty, len(segs))}
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: read meta: %w", err)
	}
	closer.Close()
	m, err := readMeta(db, cfg.Dir)
	if err != nil {
		return nil, err
	}
	if m.MaxAccounts != cfg.MaxAccounts {
		return nil, fmt.Errorf("%w: created with MaxAccounts %d, opened with %d", ErrIncompatible, m.MaxAccounts, cfg.MaxAccounts)
	}
	return &m, nil
}

func hasKeys(db *pebble.DB) (bool, error) {
	it, err := db.NewIter(nil)
	if err != nil {
		return false, err
	}
	ok := it.First()
	return ok, errors.Join(it.Error(), it.Close())
}

func prefixIter(db *pebble.DB, p byte) (*pebble.Iterator, error) {
	return db.NewIter(&pebble.IterOptions{LowerBound: []byte{p}, UpperBound: prefixEnd(p)})
}

// snapshotData is what the Snapshotter hands the persister: the id S0 of
// the last transaction it had applied and the dedup window as of S0. The
// balances are not copied: the persister reads them from the readable
// balances while the Snapshotter keeps applying.
type snapshotData struct {
	txID     uint64
	ts       int64 // timestamp of transaction txID; 0 if unknown
	refs     []refEntry
	accounts uint64 // slots in use after txID, the system account's included
	book     []byte // the pending book as of txID, encoded (pending.go)
}

// writeSnapshot persists a fuzzy snapshot of bal, started after transaction
// s.txID (every balance is at least that new), then deletes snapshots older
// than the previous one. end is called
// once every chunk is read and returns an id S1 >= every transaction whose
// resulting balance a chunk may hold, already durable in the WAL; the
// manifest records (s.txID, S1] as TxID and TxEnd. hook, if not nil, runs
// after each chunk is written (tests use it to crash or to let transactions
// stream in mid-snapshot).
//
// Each chunk is its own unsynced pebble write, so the WAL stage's synced
// commits interleave with them instead of queueing behind one large write.
// The manifest goes last, with Sync: pebble's log is sequential, so when that
// sync returns every chunk is durable too. A crash before it leaves chunks
// without a manifest, which recovery ignores and prune later deletes.
//
// The accounts as of s.txID (slots 1 .. s.accounts-1, immutable once
// created) are not in the snapshot: the Snapshotter wrote their "A"
// records when it applied their creations.
func writeSnapshot(db *pebble.DB, cfg *Config, s *snapshotData, bal []atomic.Int64, end func() uint64, hook func(chunk uint32), buf []byte) ([]byte, error) {
	// The cells of the accounts that existed at S0; an account created
	// after it is created again by the replay of (S0, S1], from zero.
	cells := cellsPerAccount * s.accounts
	n := (cells + snapChunkAccounts - 1) / snapChunkAccounts
	for i := uint64(0); i < n; i++ {
		lo, hi := i*snapChunkAccounts, min((i+1)*snapChunkAccounts, cells)
		buf = encodeCellChunkFrom(buf, lo, bal[lo:hi])
		if err := db.Set(chunkKey(s.txID, uint32(i)), buf, pebble.NoSync); err != nil {
			return buf, fmt.Errorf("ledger: write snapshot %d: %w", s.txID, err)
		}
		if hook != nil {
			hook(uint32(i))
		}
	}
	s1 := max(end(), s.txID)
	b := db.NewBatch()
	defer b.Close()
	if err := b.Set(chunkKey(s.txID, refsChunk), encodeRefsChunk(s.refs), nil); err != nil {
		return buf, err
	}
	book := s.book
	if book == nil { // no pending transfer
		book = newPendingBook(fateRetention{}).encode()
	}
	if err := b.Set(chunkKey(s.txID, pendingChunk), book, nil); err != nil {
		return buf, err
	}
	man, err := encodeMsgpack(manifest{
		FormatVersion: manifestVersion, TxID: s.txID, TxEnd: s1, MaxAccounts: cfg.MaxAccounts, Accounts: s.accounts,
		ChunkAccounts: snapChunkAccounts, Chunks: uint32(n), DedupWindow: cfg.DedupWindow,
		Refs: uint64(len(s.refs)), CreatedUnixNs: time.Now().UnixNano(),
	})
	if err != nil {
		return buf, err
	}
	if err := b.Set(idKey(prefixSnapshot, s.txID), man, nil); err != nil {
		return buf, err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return buf, fmt.Errorf("ledger: write snapshot %d: %w", s.txID, err)
	}
	return buf, prune(db)
}

// prune keeps the two newest snapshots; the WAL's retention is the
// persister's (wal.Writer.RemoveBelow).
func prune(db *pebble.DB) error {
	it, err := prefixIter(db, prefixSnapshot)
	if err != nil {
		return err
	}
	var keep uint64 // the older snapshot kept
	seen := 0
	for ok := it.Last(); ok && seen < 2; ok = it.Prev() {
		keep, _ = parseIDKey(prefixSnapshot, it.Key())
		seen++
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return err
	}
	if seen < 2 {
		return nil
	}
	b := db.NewBatch()
	defer b.Close()
	_ = b.DeleteRange(idKey(prefixSnapshot, 0), idKey(prefixSnapshot, keep), nil)
	_ = b.DeleteRange(chunkKey(0, 0), chunkKey(keep, 0), nil)
	return b.Commit(pebble.NoSync)
}
