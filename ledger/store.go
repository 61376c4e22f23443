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

// openDB opens the directory and checks its meta record. old is the meta
// record of a format 1 directory, which Open rewrites once it recovered; nil
// for a current one.
func openDB(cfg *Config) (db *pebble.DB, old *meta, err error) {
	opts := &pebble.Options{
		FS:     cfg.FS,
		Logger: quietLogger{},
		// WAL batches arrive as few large values; a large memtable keeps
		// flushes rare and lets recent Result reads hit memory.
		MemTableSize:                32 << 20,
		MemTableStopWritesThreshold: 4,
	}
	// CPU, not disk, is what two cores run out of; WAL values live only
	// until retention deletes them and are read only by recovery.
	opts.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	db, err = pebble.Open(cfg.Dir, opts)
	if err != nil {
		return nil, nil, openError(cfg.Dir, "", err)
	}
	if old, err = checkMeta(db, cfg); err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, old, nil
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

// checkMeta writes the meta record of a new directory, or checks that an
// existing one matches cfg; old is the meta record of a format 1 directory.
func checkMeta(db *pebble.DB, cfg *Config) (old *meta, err error) {
	val, closer, err := db.Get(metaKey)
	if errors.Is(err, pebble.ErrNotFound) {
		if nonEmpty, err := hasKeys(db); err != nil || nonEmpty {
			if err == nil {
				err = &CorruptError{Key: metaKey, Reason: "meta record missing from a non-empty directory"}
			}
			return nil, err
		}
		return nil, writeMeta(db, cfg, time.Now().UnixNano())
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: read meta: %w", err)
	}
	m, err := decodeMeta(val)
	closer.Close()
	if err != nil {
		return nil, &CorruptError{Key: metaKey, Reason: err.Error()}
	}
	if !readableFormat(m.FormatVersion) {
		return nil, fmt.Errorf("%w: format version %d, this build reads %d and %d", ErrIncompatible, m.FormatVersion, formatVersionV1, formatVersion)
	}
	if m.MaxAccounts != cfg.MaxAccounts {
		return nil, fmt.Errorf("%w: created with MaxAccounts %d, opened with %d", ErrIncompatible, m.MaxAccounts, cfg.MaxAccounts)
	}
	if want := fingerprintOf(m.FormatVersion, cfg.MaxAccounts); m.Fingerprint != want {
		return nil, fmt.Errorf("%w: config fingerprint %08x, want %08x", ErrIncompatible, m.Fingerprint, want)
	}
	if m.FormatVersion != formatVersion {
		return &m, nil
	}
	return nil, nil
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

// readResult finds transaction id in the WAL.
func readResult(db *pebble.DB, id uint64) (Result, error) {
	it, err := prefixIter(db, prefixWAL)
	if err != nil {
		return Result{}, err
	}
	defer it.Close()
	if !it.SeekLT(idKey(prefixWAL, id+1)) {
		if err := it.Error(); err != nil {
			return Result{}, err
		}
		return Result{}, fmt.Errorf("tx %d: %w", id, ErrNotFound)
	}
	b, err := openBatch(it.Value())
	if err != nil {
		return Result{}, &CorruptError{Key: append([]byte(nil), it.Key()...), Reason: err.Error()}
	}
	var t walTx
	for {
		ok, err := b.next(&t)
		if err != nil {
			return Result{}, &CorruptError{Key: append([]byte(nil), it.Key()...), FirstTx: TxID(b.first), LastTx: TxID(b.last()), Reason: err.Error()}
		}
		if !ok {
			return Result{}, fmt.Errorf("tx %d: %w", id, ErrNotFound)
		}
		if t.id == id {
			return t.result(), nil
		}
	}
}

// snapshotData is what the Snapshotter hands the persister: the id S0 of
// the last transaction it had applied and the dedup window as of S0. The
// balances are not copied: the persister reads them from the readable
// balances while the Snapshotter keeps applying.
type snapshotData struct {
	txID uint64
	refs []refEntry
}

// writeSnapshot persists a fuzzy snapshot of bal, started after transaction
// s.txID (every balance is at least that new), then deletes snapshots older
// than the previous one and the WAL below s.txID-retention. end is called
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
func writeSnapshot(db *pebble.DB, cfg *Config, s *snapshotData, bal []atomic.Int64, end func() uint64, hook func(chunk uint32), buf []byte) ([]byte, error) {
	n := (uint64(len(bal)) + snapChunkAccounts - 1) / snapChunkAccounts
	for i := uint64(0); i < n; i++ {
		lo, hi := i*snapChunkAccounts, min((i+1)*snapChunkAccounts, uint64(len(bal)))
		buf = encodeBalanceChunkFrom(buf, lo, bal[lo:hi])
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
	man, err := encodeMsgpack(manifest{
		FormatVersion: formatVersion, TxID: s.txID, TxEnd: s1, MaxAccounts: uint64(len(bal)),
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
	return buf, prune(db, cfg, s.txID)
}

// prune keeps the two newest snapshots and the WAL from newest-retention on.
func prune(db *pebble.DB, cfg *Config, newest uint64) error {
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
	b := db.NewBatch()
	defer b.Close()
	if seen == 2 {
		_ = b.DeleteRange(idKey(prefixSnapshot, 0), idKey(prefixSnapshot, keep), nil)
		_ = b.DeleteRange(chunkKey(0, 0), chunkKey(keep, 0), nil)
	}
	if cfg.WALRetention >= 0 && newest > uint64(cfg.WALRetention) {
		cut := newest - uint64(cfg.WALRetention) // keep transactions > cut
		// The batch holding cut+1 and everything after it stay.
		wit, err := prefixIter(db, prefixWAL)
		if err != nil {
			return err
		}
		if wit.SeekLT(idKey(prefixWAL, cut+2)) {
			_ = b.DeleteRange(idKey(prefixWAL, 0), append([]byte(nil), wit.Key()...), nil)
		}
		if err := errors.Join(wit.Error(), wit.Close()); err != nil {
			return err
		}
	}
	if b.Empty() {
		return nil
	}
	return b.Commit(pebble.NoSync)
}

// scanWAL calls fn for every transaction in the WAL with id >= from, in id
// order, after verifying each batch. Recovery, Result and the offline tools
// share the decoding; scanWAL itself only reads.
func scanWAL(db *pebble.DB, from uint64, fn func(*walTx) error) error {
	it, err := prefixIter(db, prefixWAL)
	if err != nil {
		return err
	}
	defer it.Close()
	ok := it.SeekLT(idKey(prefixWAL, from+1))
	if !ok {
		ok = it.First()
	}
	var t walTx
	for ; ok; ok = it.Next() {
		b, err := openBatch(it.Value())
		if err != nil {
			return &CorruptError{Key: clone(it.Key()), Reason: err.Error()}
		}
		for {
			more, err := b.next(&t)
			if err != nil {
				return &CorruptError{Key: clone(it.Key()), FirstTx: TxID(b.first), LastTx: TxID(b.last()), Reason: err.Error()}
			}
			if !more {
				break
			}
			if t.id < from {
				continue
			}
			if err := fn(&t); err != nil {
				return err
			}
		}
	}
	return it.Error()
}
