package ledger

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lanework/lanework/ledger/internal/wal"
)

// migrate moves the WAL of a format 1 or 2 directory (batches under "W"
// keys in pebble) into WAL segments, then makes the directory format 3.
//
// The meta record is the commit point. Before it is rewritten the
// directory is still the old format and its W keys are intact, so a crash
// mid-way leaves segments a rerun removes first; after it, W keys a crash
// left behind are deleted by the next Open. The batches are copied as they
// are (the record payload is the old key's value), so recovery replays
// exactly what it would have.
func migrate(db *pebble.DB, cfg *Config, old *meta) error {
	opts := walOptions(cfg, db)
	segs, unknown, err := wal.List(cfg.FS, opts.Dir)
	if err != nil {
		return err
	}
	if len(unknown) > 0 {
		return &CorruptError{File: walDir + "/" + unknown[0], Reason: fmt.Sprintf("unexpected file in a format %d directory's wal/", old.FormatVersion)}
	}
	for _, s := range segs { // an earlier migration cut short
		if err := cfg.FS.Remove(cfg.FS.PathJoin(opts.Dir, s.Name())); err != nil {
			return fmt.Errorf("ledger: migrate: %w", err)
		}
	}
	if err := copyWALKeys(db, opts, -1); err != nil {
		return fmt.Errorf("ledger: migrate format %d: %w", old.FormatVersion, walError(err))
	}
	if err := writeMeta(db, cfg, old.CreatedUnixNs); err != nil {
		return err
	}
	return dropWALKeys(db)
}

// migrateCopyOnly copies the first n W batches and stops: a migration a
// crash cut short (tests).
func migrateCopyOnly(db *pebble.DB, cfg *Config, n int) error {
	return copyWALKeys(db, walOptions(cfg, db), n)
}

// copyWALKeys appends every W batch (the first limit if limit >= 0) to a
// new log.
func copyWALKeys(db *pebble.DB, opts wal.Options, limit int) error {
	var w *wal.Writer
	var rec []byte
	n := 0
	err := scanWALKeys(db, func(val []byte) error {
		if n == limit {
			return nil
		}
		n++
		first, last, err := batchSpan(val)
		if err != nil {
			return err
		}
		if w == nil {
			if w, err = wal.Create(opts, nil, first); err != nil {
				return err
			}
		}
		rec = append(append(rec[:0], make([]byte, wal.HeaderRoom)...), val...)
		return w.Append(rec, first, last)
	})
	if w != nil {
		err = errors.Join(err, w.Close())
	}
	return err
}

// dropWALKeys deletes the W keys a migrated directory no longer needs.
func dropWALKeys(db *pebble.DB) error {
	if err := db.DeleteRange([]byte{prefixWAL}, prefixEnd(prefixWAL), pebble.Sync); err != nil {
		return fmt.Errorf("ledger: migrate: drop old WAL keys: %w", err)
	}
	return nil
}

// scanWALKeys calls fn with every W value of a format 1 or 2 directory, in
// key (id) order.
func scanWALKeys(db *pebble.DB, fn func(val []byte) error) error {
	it, err := prefixIter(db, prefixWAL)
	if err != nil {
		return err
	}
	for ok := it.First(); ok && err == nil; ok = it.Next() {
		if err = fn(it.Value()); err != nil {
			err = &CorruptError{Key: clone(it.Key()), Reason: err.Error()}
		}
	}
	return errors.Join(err, it.Error(), it.Close())
}
