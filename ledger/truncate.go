package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lanework/lanework/ledger/internal/offline"
	"github.com/lanework/lanework/ledger/internal/wal"
	"github.com/vmihailenco/msgpack/v5"
)

// ErrRecover is wrapped by every refusal of truncateDir (ledger recover):
// the directory opens as it is, the cut is beyond the damage, or what would
// be left cannot be recovered.
var ErrRecover = errors.New("ledger: recover refused")

// Leftovers of an interrupted truncateDir; Open refuses a directory with
// either (storecheck.go), and truncateDir finishes the job.
const (
	walNewDir = "wal.new" // the cut log being written
	walOldDir = "wal.old" // the damaged log, replaced
)

// truncation is the record ledger recover leaves in pebble, under
// "R" + u64 Unix ns: that, when and where the operator accepted the loss.
type truncation struct {
	TruncatedAfter   uint64   `msgpack:"truncated_after"`
	DamageFile       string   `msgpack:"damage_file"`
	DamageOffset     int64    `msgpack:"damage_offset"`
	DamageKey        []byte   `msgpack:"damage_key"`
	DamageFirstTx    uint64   `msgpack:"damage_first_tx"`
	DamageLastTx     uint64   `msgpack:"damage_last_tx"`
	DamageReason     string   `msgpack:"damage_reason"`
	FirstTx          uint64   `msgpack:"first_tx"` // first transaction of the log kept
	SnapshotsDropped []uint64 `msgpack:"snapshots_dropped"`
	UnixNs           int64    `msgpack:"unix_ns"`
}

// truncateDir is ledger recover: for a closed directory that Open refuses
// with a *CorruptError naming the transactions it affects, it keeps the log
// up to transaction after (at most the last one before the damage), drops
// everything later (WAL records, snapshots whose balances include any of
// it, idempotency-index entries) and records that it did; then the
// directory opens. A crash during it leaves a directory Open refuses until
// truncateDir runs again with the same after.
func truncateDir(fs vfs.FS, dir string, after uint64) (*truncation, error) {
	if fs == nil {
		fs = vfs.Default
	}
	refuse := func(format string, args ...any) (*truncation, error) {
		return nil, fmt.Errorf("%w: %s: "+format, append([]any{ErrRecover, dir}, args...)...)
	}
	if after == 0 {
		return refuse("--truncate-after must name a transaction (>= 1)")
	}
	newDir, oldDir, logDir := fs.PathJoin(dir, walNewDir), fs.PathJoin(dir, walOldDir), fs.PathJoin(dir, walDir)
	if exists(fs, oldDir) {
		// Interrupted after the cut log was complete: finish the swap.
		if exists(fs, newDir) {
			if err := fs.Rename(newDir, logDir); err != nil {
				return nil, fmt.Errorf("ledger: recover: %w", err)
			}
			if err := syncDir(fs, dir); err != nil {
				return nil, err
			}
		}
		return finishTruncate(fs, dir, after, nil)
	}
	if exists(fs, newDir) { // interrupted while writing the cut log
		if err := fs.RemoveAll(newDir); err != nil {
			return nil, fmt.Errorf("ledger: recover: %w", err)
		}
	}
	ro, err := openChecked(fs, dir)
	if err != nil {
		return nil, err
	}
	if ro == nil {
		return nil, fmt.Errorf("%w: %s holds no pebble store", ErrNoLedger, dir)
	}
	defer func() {
		if ro != nil {
			ro.Close()
		}
	}()
	m, err := readMeta(ro, dir)
	if err != nil {
		return nil, err
	}
	if m.FormatVersion != formatVersion && m.FormatVersion != formatVersionV4 {
		return refuse("format %d: open it once with this build first", m.FormatVersion)
	}
	cfg, err := (&Config{FS: fs, Dir: dir, MaxAccounts: m.MaxAccounts}).withDefaults()
	if err != nil {
		return nil, err
	}
	_, err = recoverState(ro, &cfg)
	var ce *CorruptError
	switch {
	case err == nil:
		return refuse("no damage: the directory opens as it is, and recover cuts only a damaged log")
	case !errors.As(err, &ce):
		return nil, err
	case ce.FirstTx == 0:
		return refuse("the damage names no transaction, so cutting the log does not repair it: %v", ce)
	case after >= uint64(ce.FirstTx):
		return refuse("tx %d is at or beyond the damage, which starts at tx %d: the log can be cut after tx %d at the latest (%v)",
			after, ce.FirstTx, uint64(ce.FirstTx)-1, ce)
	}
	rec := &truncation{TruncatedAfter: after, DamageFile: ce.File, DamageOffset: ce.Offset, DamageKey: ce.Key,
		DamageFirstTx: uint64(ce.FirstTx), DamageLastTx: uint64(ce.LastTx), DamageReason: ce.Reason}

	// Which snapshots survive: those whose balances include nothing after
	// the cut. Recovery needs one at or after the log's start, or a log
	// from transaction 1.
	bounds, err := readBounds(ro)
	if err != nil {
		return nil, err
	}
	var snaps []snapSpan
	it, err := prefixIter(ro, prefixSnapshot)
	if err != nil {
		return nil, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		id, ok := parseIDKey(prefixSnapshot, it.Key())
		if !ok {
			continue
		}
		info, err := readSnapshot(ro, m.MaxAccounts, id, it.Value(), func(uint64, []int64) {}, func(acctMeta) error { return nil })
		end := id
		if err == nil {
			end = info.end
		}
		if err != nil || end > after {
			rec.SnapshotsDropped = append(rec.SnapshotsDropped, id)
			continue
		}
		snaps = append(snaps, snapSpan{id, end})
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, err
	}

	// Copy the log up to after into wal.new; the batch holding after is
	// re-encoded with its transactions up to after.
	opts := walOptions(&cfg, nil, nil)
	opts.Dir = newDir
	if opts.FirstSeq, err = nextSeq(&cfg, bounds); err != nil {
		return nil, err
	}
	var w *wal.Writer
	var buf []byte
	errStop := errors.New("stop")
	_, err = wal.Scan(walOptions(&cfg, nil, nil), bounds, 0, func(_ wal.Segment, _ int64, p []byte) error {
		first, last, err := batchSpan(p)
		if err != nil {
			return err
		}
		if w == nil {
			rec.FirstTx = first
			if w, err = wal.Create(opts, nil, first); err != nil {
				return err
			}
		}
		if last > after {
			if buf, err = cutBatch(buf[:0], p, after); err != nil {
				return err
			}
			last = after
		} else {
			buf = append(append(buf[:0], make([]byte, wal.HeaderRoom)...), p...)
		}
		if err := w.Append(buf, first, last); err != nil {
			return err
		}
		if last == after {
			return errStop
		}
		return nil
	})
	if w != nil {
		err = errors.Join(err, w.Close())
	}
	if !errors.Is(err, errStop) {
		fs.RemoveAll(newDir)
		if err != nil {
			return nil, walError(err)
		}
		return refuse("the log holds no transaction %d", after)
	}
	if rec.FirstTx > 1 && !hasSnapshotFrom(snaps, rec.FirstTx) {
		fs.RemoveAll(newDir)
		return refuse("the log starts at tx %d and no snapshot at or after tx %d covers only transactions up to %d: nothing to recover from",
			rec.FirstTx, rec.FirstTx-1, after)
	}
	if err := ro.Close(); err != nil {
		return nil, err
	}
	ro = nil
	if err := fs.Rename(logDir, oldDir); err != nil {
		return nil, fmt.Errorf("ledger: recover: %w", err)
	}
	if err := fs.Rename(newDir, logDir); err != nil {
		return nil, fmt.Errorf("ledger: recover: %w", err)
	}
	if err := syncDir(fs, dir); err != nil {
		return nil, err
	}
	return finishTruncate(fs, dir, after, rec)
}

// nextSeq is the first sequence number of the cut log: after every
// segment the old log had (those in wal/, the newest pebble recorded, and
// those the index keeps in index/wal/), so that no segment name is used
// for two files: the index refers to segments by name, and index/wal/ is
// left as it is.
func nextSeq(cfg *Config, bounds wal.Bounds) (uint64, error) {
	last := bounds.Newest
	for _, d := range []string{cfg.FS.PathJoin(cfg.Dir, walDir), keptDir(cfg)} {
		segs, _, err := wal.List(cfg.FS, d)
		if err != nil {
			return 0, err
		}
		if n := len(segs); n > 0 {
			last = max(last, segs[n-1].Seq)
		}
	}
	return last + 1, nil
}

// snapSpan is a snapshot's S0 and S1.
type snapSpan struct{ id, end uint64 }

// hasSnapshotFrom reports whether a snapshot can start a replay of a log
// whose first transaction is first.
func hasSnapshotFrom(snaps []snapSpan, first uint64) bool {
	for _, s := range snaps {
		if s.id >= first-1 {
			return true
		}
	}
	return false
}

// finishTruncate makes pebble agree with the cut log in wal/: one synced
// batch records the new log's segments, deletes the snapshots and the
// idempotency-index entries past the cut and writes the truncation record;
// then wal.old goes. rec is nil when an interrupted run is finished: the
// record is rebuilt from what the new log says.
func finishTruncate(fs vfs.FS, dir string, after uint64, rec *truncation) (*truncation, error) {
	cfg := Config{FS: fs, Dir: dir}
	segs, _, err := listSegments(fs, dir)
	if err != nil {
		return nil, err
	}
	res, err := wal.Scan(walOptions(&cfg, nil, nil), wal.Bounds{}, 0, func(wal.Segment, int64, []byte) error { return nil })
	if err != nil {
		return nil, walError(err)
	}
	if len(segs) == 0 || res.Last != after {
		return nil, fmt.Errorf("%w: %s: the cut log ends at tx %d, not %d: run recover with --truncate-after %d", ErrRecover, dir, res.Last, after, res.Last)
	}
	db, err := pebble.Open(dir, pebbleOptions(&cfg))
	if err != nil {
		return nil, openError(dir, "", err)
	}
	if rec == nil {
		rec = &truncation{TruncatedAfter: after, FirstTx: res.First, DamageReason: "(an interrupted recover, finished)"}
	}
	rec.UnixNs = time.Now().UnixNano()
	b := db.NewBatch()
	err = errors.Join(
		b.Set(newestSegKey, sealRecord(binary.LittleEndian.AppendUint64(nil, segs[len(segs)-1].Seq)), nil),
		b.Set(oldestSegKey, sealRecord(binary.LittleEndian.AppendUint64(nil, segs[0].Seq)), nil))
	// Every snapshot past the cut: those found before, and (finishing an
	// interrupted run) whatever is left above after.
	it, ierr := prefixIter(db, prefixSnapshot)
	if ierr != nil {
		err = errors.Join(err, ierr)
	} else {
		for ok := it.SeekGE(idKey(prefixSnapshot, after+1)); ok; ok = it.Next() {
			if id, ok := parseIDKey(prefixSnapshot, it.Key()); ok && !containsID(rec.SnapshotsDropped, id) {
				rec.SnapshotsDropped = append(rec.SnapshotsDropped, id)
			}
		}
		err = errors.Join(err, it.Close())
	}
	for _, id := range rec.SnapshotsDropped {
		err = errors.Join(err, b.Delete(idKey(prefixSnapshot, id), nil),
			b.DeleteRange(chunkKey(id, 0), idKey(prefixChunk, id+1), nil))
	}
	err = errors.Join(err, cutRuns(db, b, after))
	body, merr := encodeMsgpack(rec)
	err = errors.Join(err, merr)
	if merr == nil {
		err = errors.Join(err, b.Set(idKey(prefixTruncation, uint64(rec.UnixNs)), body, nil))
	}
	if err == nil {
		err = b.Commit(pebble.Sync)
	}
	err = errors.Join(err, b.Close(), db.Close())
	if err != nil {
		return nil, fmt.Errorf("ledger: recover: %w", err)
	}
	if err := fs.RemoveAll(fs.PathJoin(dir, walOldDir)); err != nil {
		return nil, fmt.Errorf("ledger: recover: %w", err)
	}
	if err := syncDir(fs, dir); err != nil {
		return nil, err
	}
	return rec, nil
}

// export is t as package inspect sees it.
func (t *truncation) export() offline.Truncation {
	out := offline.Truncation{TruncatedAfter: t.TruncatedAfter, FirstTx: t.FirstTx, SnapshotsDropped: t.SnapshotsDropped, UnixNs: t.UnixNs}
	if t.DamageReason != "" && t.DamageFirstTx != 0 {
		out.Damage = &CorruptError{File: t.DamageFile, Offset: t.DamageOffset, Key: t.DamageKey,
			FirstTx: TxID(t.DamageFirstTx), LastTx: TxID(t.DamageLastTx), Reason: t.DamageReason}
	}
	return out
}

// readTruncations returns the truncation records of db, oldest first.
func readTruncations(db *pebble.DB) ([]truncation, error) {
	it, err := prefixIter(db, prefixTruncation)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []truncation
	for ok := it.First(); ok; ok = it.Next() {
		var t truncation
		body, err := openRecord(it.Value())
		if err == nil {
			err = msgpack.Unmarshal(body, &t)
		}
		if err != nil {
			return nil, &CorruptError{Key: clone(it.Key()), Reason: "truncation record: " + err.Error()}
		}
		out = append(out, t)
	}
	return out, it.Error()
}

func containsID(ids []uint64, id uint64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// cutBatch returns the batch payload p holding only its transactions up to
// after, encoded afresh (with wal.HeaderRoom in front).
func cutBatch(dst, p []byte, after uint64) ([]byte, error) {
	br, err := openBatch(p)
	if err != nil {
		return nil, err
	}
	var recs []txRecord
	var t walTx
	for {
		ok, err := br.next(&t)
		if err != nil {
			return nil, err
		}
		if !ok || t.id > after {
			break
		}
		recs = append(recs, t.record())
	}
	out, n := encodeBatch(append(dst, make([]byte, wal.HeaderRoom)...), recs, 1<<62)
	if n != len(recs) {
		return nil, fmt.Errorf("re-encoding tx %d..%d: %d of %d fit", recs[0].id, after, n, len(recs))
	}
	return out, nil
}

func exists(fs vfs.FS, path string) bool {
	_, err := fs.Stat(path)
	return err == nil
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("ledger: recover: %w", err)
	}
	return errors.Join(d.Sync(), d.Close())
}
