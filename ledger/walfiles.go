package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"path/filepath"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lanework/lanework/ledger/internal/wal"
)

// walDir is the WAL's directory inside the ledger directory.
const walDir = "wal"

// walOptions are the WAL's options for a ledger directory. With db set, a
// new segment's sequence number is recorded in pebble (synced) before the
// segment takes a batch, so that a deleted newest segment is noticed, with
// hash, the chain of the batches appended so far (see writeNewest).
func walOptions(cfg *Config, db *pebble.DB, hash *atomic.Uint64) wal.Options {
	fs, size := cfg.FS, cfg.WALSegmentSize
	if fs == nil {
		fs = vfs.Default
	}
	if size == 0 {
		size = DefaultWALSegmentSize
	}
	o := wal.Options{FS: fs, Dir: fs.PathJoin(cfg.Dir, walDir), SegmentSize: size, Span: batchSpan}
	if db != nil {
		o.Created = func(s wal.Segment) error { return writeNewest(db, s.Seq, hash) }
		o.Oldest = func(s wal.Segment) error {
			// The hashes of the segments retention removes go with them.
			if err := db.DeleteRange(idKey(prefixHash, 0), idKey(prefixHash, s.Seq), pebble.NoSync); err != nil {
				return fmt.Errorf("ledger: drop WAL segment hashes: %w", err)
			}
			return writeSeq(db, oldestSegKey, s.Seq)
		}
	}
	return o
}

// writeNewest records seq as the newest segment and, beside it, the chain
// of the checksums of every batch before the segment (hash, which the
// caller has advanced past every batch appended so far): replicas that
// retain different amounts of WAL start their hash from it and agree.
func writeNewest(db *pebble.DB, seq uint64, hash *atomic.Uint64) error {
	b := db.NewBatch()
	defer b.Close()
	_ = b.Set(newestSegKey, sealRecord(binary.LittleEndian.AppendUint64(nil, seq)), nil)
	if hash != nil {
		_ = b.Set(idKey(prefixHash, seq), sealRecord(binary.LittleEndian.AppendUint64(nil, hash.Load())), nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("ledger: record WAL segment %d: %w", seq, err)
	}
	return nil
}

// segmentHash returns the hash chain before segment seq's first batch, if
// its creation recorded one (segments written before the hashes were have
// none).
func segmentHash(db *pebble.DB, seq uint64) (uint64, bool, error) {
	key := idKey(prefixHash, seq)
	if _, closer, err := db.Get(key); errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	} else if err == nil {
		closer.Close()
	}
	h, err := readSeq(db, key)
	return h, err == nil, err
}

func writeSeq(db *pebble.DB, key []byte, seq uint64) error {
	if err := db.Set(key, sealRecord(binary.LittleEndian.AppendUint64(nil, seq)), pebble.Sync); err != nil {
		return fmt.Errorf("ledger: record WAL segment %d: %w", seq, err)
	}
	return nil
}

// keptDir is where, with the index on, every WAL segment is also
// hard-linked under its own name (index/wal/): the index's blocks refer to
// segments by name, and retention, which unlinks the wal/ name, leaves
// that inode to the index (wal.Options.Keep).
func keptDir(cfg *Config) string { return cfg.FS.PathJoin(cfg.Dir, indexDir, walDir) }

// keepLive links every live segment missing from index/wal/ (an index
// turned on again, a crash between a segment's creation and its link). A
// name in both that is two files is a *CorruptError naming both.
func keepLive(cfg *Config, segs []wal.Segment) error {
	_, err := wal.LinkKept(cfg.FS, cfg.FS.PathJoin(cfg.Dir, walDir), keptDir(cfg), segs)
	return keptError(cfg, err)
}

// pruneKept empties index/wal/ of every segment but the live ones (which
// stay linked): the index's history was dropped, and nothing refers to
// the others.
func pruneKept(cfg *Config, segs []wal.Segment) error {
	n, err := wal.PruneKept(cfg.FS, keptDir(cfg), segs)
	if n > 0 {
		log.Printf("ledger: %s: the history index starts afresh: %d kept WAL segment(s) removed from %s/%s/", cfg.Dir, n, indexDir, walDir)
	}
	return keptError(cfg, err)
}

func keptError(cfg *Config, err error) error {
	var ce *wal.ConflictError
	if errors.As(err, &ce) {
		rel := func(p string) string {
			if r, rerr := filepath.Rel(cfg.Dir, p); rerr == nil {
				return filepath.ToSlash(r)
			}
			return p
		}
		return &CorruptError{File: rel(ce.Kept), Reason: "not the same file as " + rel(ce.Live) + ": a kept WAL segment is never replaced"}
	}
	if err != nil {
		return fmt.Errorf("ledger: kept WAL segments: %w", err)
	}
	return nil
}

func listSegments(fs vfs.FS, dir string) ([]wal.Segment, []string, error) {
	return wal.List(fs, fs.PathJoin(dir, walDir))
}

// batchSpan verifies a batch (checksum and header) and returns its ids.
func batchSpan(p []byte) (first, last uint64, err error) {
	b, err := openBatch(p)
	if err != nil {
		return 0, 0, err
	}
	return b.first, b.last(), nil
}

// readBounds returns the oldest and newest segment the ledger recorded.
func readBounds(db *pebble.DB) (wal.Bounds, error) {
	var b wal.Bounds
	var err error
	if b.Oldest, err = readSeq(db, oldestSegKey); err == nil {
		b.Newest, err = readSeq(db, newestSegKey)
	}
	return b, err
}

func readSeq(db *pebble.DB, key []byte) (uint64, error) {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("ledger: read WAL segment record: %w", err)
	}
	defer closer.Close()
	body, err := openRecord(v)
	if err == nil && len(body) != 8 {
		err = fmt.Errorf("%d-byte value", len(body))
	}
	if err != nil {
		return 0, &CorruptError{Key: clone(key), Reason: "WAL segment record: " + err.Error()}
	}
	return binary.LittleEndian.Uint64(body), nil
}

// walError turns the WAL's *wal.CorruptError into the ledger's, naming the
// file relative to the ledger directory.
func walError(err error) error {
	var we *wal.CorruptError
	if errors.As(err, &we) {
		return &CorruptError{File: walDir + "/" + we.File, Offset: we.Offset, FirstTx: TxID(we.FirstTx), LastTx: TxID(we.LastTx), Reason: we.Reason}
	}
	return err
}

// TornTail describes the torn tail of the newest WAL segment that Open
// dropped (or would drop): bytes from Offset on holding no complete record,
// with nothing synced after them. They were never acknowledged.
type TornTail struct {
	File     string `json:"file"` // relative to the ledger directory
	Offset   int64  `json:"offset"`
	Dropped  int64  `json:"dropped"`   // non-zero bytes dropped
	LastKept TxID   `json:"last_kept"` // last transaction kept
}

func tornTail(t *wal.Torn) *TornTail {
	if t == nil {
		return nil
	}
	return &TornTail{File: walDir + "/" + t.File, Offset: t.Offset, Dropped: t.Dropped, LastKept: TxID(t.LastKept)}
}

// readResult finds transaction id in the WAL.
func readResult(w *wal.Writer, id uint64) (Result, error) {
	var res Result
	found := false
	err := w.Find(id, func(p []byte) error {
		b, err := openBatch(p)
		if err != nil {
			return err
		}
		var t walTx
		for {
			ok, err := b.next(&t)
			if err != nil || !ok {
				return err
			}
			if t.id == id {
				res, found = t.result(), true
				return nil
			}
		}
	})
	if errors.Is(err, wal.ErrNotFound) || (err == nil && !found) {
		return Result{}, fmt.Errorf("tx %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Result{}, walError(err)
	}
	return res, nil
}

// scanWAL calls fn for every transaction in the WAL of dir with id >= from,
// in id order, after the checks of wal.Scan. It reads only; on an open
// ledger it sees at least what was committed when it started.
func scanWAL(cfg *Config, from uint64, fn func(*walTx) error) (wal.Result, error) {
	var t walTx
	res, err := wal.Scan(walOptions(cfg, nil, nil), wal.Bounds{}, from, func(seg wal.Segment, off int64, p []byte) error {
		b, err := openBatch(p)
		for err == nil {
			var more bool
			if more, err = b.next(&t); err != nil {
				break
			}
			if !more {
				return nil
			}
			if t.id < from {
				continue
			}
			if err := fn(&t); err != nil {
				return err
			}
		}
		return &CorruptError{File: walDir + "/" + seg.Name(), Offset: off, FirstTx: TxID(b.first), LastTx: TxID(b.last()), Reason: err.Error()}
	})
	return res, walError(err)
}
