package ledger

import (
	"errors"
	"fmt"
	"log"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
)

// indexDir is the history and query indexes' own pebble store, under the
// ledger directory. The index is derived data (Open rebuilds it from the
// WAL after its mark), so its store has no log: what pebble's log and the
// ledger store's memtable cost every transaction (a copy, a checksum, and
// flushes that interleave the index's keys with the ledger's) it spares.
//
// Without a log, what survives a crash is what pebble had flushed: whole
// memtables, oldest first. A batch is applied to one memtable (or queued
// whole as its own), so the store holds every batch up to some point and
// none after, and each batch says what it completes (Open's with the mark
// "I", the Snapshotter's with their last block; readIndexState takes the
// later): what is read after a crash never claims a key that is not there. The
// WAL the catch-up needs is kept until a flush has made the index durable
// past it (Ledger.indexFloor), and Close flushes.
const indexDir = "index"

// indexStoreOptions are pebbleOptions without a log. The index's keys
// mostly append (blocks, time keys and history records by ascending tx
// id), so a larger memtable makes fewer, larger flushes.
func indexStoreOptions(cfg *Config) *pebble.Options {
	opts := pebbleOptions(cfg)
	opts.DisableWAL = true
	opts.MemTableSize = 64 << 20
	return opts
}

// openIndexStore opens (or creates) the index's store. One that does not
// open because it is damaged is removed and created anew: the caller
// rebuilds the index. One that does not open for a reason of the host is
// left alone and the error returned: removing it would cost a rebuild, or,
// if retention has removed the WAL it was built from, the history itself.
func openIndexStore(cfg *Config) (*pebble.DB, error) {
	dir := cfg.FS.PathJoin(cfg.Dir, indexDir)
	db, err := pebble.Open(dir, indexStoreOptions(cfg))
	if err == nil {
		return db, nil
	}
	if oerr := openError(dir, "", err); hostError(err) || errors.Is(oerr, ErrLocked) {
		return nil, oerr
	}
	log.Printf("ledger: %s: the history index's store does not open (%v): removed, the index is rebuilt", cfg.Dir, err)
	if rerr := cfg.FS.RemoveAll(dir); rerr != nil {
		return nil, fmt.Errorf("ledger: remove damaged index store: %w", errors.Join(err, rerr))
	}
	if db, err = pebble.Open(dir, indexStoreOptions(cfg)); err != nil {
		return nil, openError(dir, "", err)
	}
	return db, nil
}

// hostError says whether err is the host's (an I/O error, a full disk, no
// permission, too many open files, a lock another process holds): a
// system call's error other than a missing file. A missing file, a
// checksum or a parse error is the store's damage.
func hostError(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno) && errno != syscall.ENOENT
}

// closeIndexStore flushes the index's memtables (it has no log to replay
// them from) and closes its store.
func closeIndexStore(db *pebble.DB) error {
	if db == nil {
		return nil
	}
	return errors.Join(db.Flush(), db.Close())
}

// dropLegacyIndex deletes the index keys a build before the index's own
// store wrote into the ledger's store. It reports whether there were any:
// the index then starts afresh in its store (rebuilt from the WAL, or
// restarted at the recovered state if the WAL no longer reaches back).
// Synced, so that a crash does not bring them back to be dropped again.
func dropLegacyIndex(db *pebble.DB) (bool, error) {
	found := false
	for _, p := range append(indexPrefixes[:], prefixIndexState) {
		it, err := prefixIter(db, p)
		if err != nil {
			return false, err
		}
		found = found || it.First()
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return false, err
		}
	}
	if !found {
		return false, nil
	}
	b := db.NewBatch()
	defer b.Close()
	for _, p := range append(indexPrefixes[:], prefixIndexState) {
		if err := b.DeleteRange([]byte{p}, prefixEnd(p), nil); err != nil {
			return false, err
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return false, fmt.Errorf("ledger: drop the index from the ledger's store: %w", err)
	}
	return true, nil
}

// indexFloor is the persister's bound on WAL retention with the index on:
// the first transaction the index store may lack after a crash. Below
// keep it is a no-op; otherwise it flushes the index store, which makes
// every index batch committed before the call durable (flushed is the
// mark it last made durable).
func (l *Ledger) indexFloor(keep uint64, flushed *uint64) (uint64, error) {
	if *flushed+1 >= keep {
		return keep, nil
	}
	m := l.indexed.Load() // the Snapshotter stores it after its batch's commit
	if err := l.ixdb.Flush(); err != nil {
		return 0, fmt.Errorf("ledger: flush index: %w", err)
	}
	*flushed = m
	return min(keep, m+1), nil
}
