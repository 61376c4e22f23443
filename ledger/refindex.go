package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// The durable idempotency index keeps UserRefs beyond the Transactor's
// in-memory window (dedup.go), across restarts, for Config.DedupRetention.
// In pebble it is a sequence of runs, one per Snapshotter batch with refs:
//
//	"D" + u64 id of the run's first transaction (big-endian)  ->
//	    CRC32C ++ u32 count, i64 first ts, i64 last ts, count x {u64 tx id, u64 user ref}
//
// Keys only grow, so pebble appends them (no compaction rewrites), and
// pruning by age is one range deletion of whole runs. The Snapshotter writes
// each run, unsynced, before the snapshot that covers it; that snapshot's
// synced manifest makes it durable, and Open rewrites the refs of the
// transactions it replays after the snapshot (a crash may have lost their
// run). Lookups never read pebble: Open loads the runs into the
// Transactor's exact in-memory table (reftable.go), and the Transactor adds
// every new ref to it.

// refRunMax bounds the refs of one run.
const refRunMax = 4096

const (
	refRunHeader = 4 + 4 + 8 + 8 // CRC, count, first and last ts
	refRunEntry  = 16
)

// refUse is a ref with the transaction that first used it.
type refUse struct {
	id, ref uint64
	ts      int64
}

// refRetention is how long a ref is remembered.
type refRetention struct {
	age int64  // ns
	txs uint64 // 0: no count limit
}

func retentionOf(cfg *Config) refRetention {
	return refRetention{age: int64(cfg.DedupRetention), txs: cfg.DedupRetentionTxs}
}

// expired reports whether a ref first used by transaction origID at origTs
// is forgotten for transaction id at ts.
func (k refRetention) expired(origID uint64, origTs int64, id uint64, ts int64) bool {
	return ts-origTs > k.age || (k.txs > 0 && id-origID > k.txs)
}

// graced is k plus an eighth of each limit. Entries are dropped only past
// it, so that a retry shortly after the retention still finds its original
// and is counted (Stats.DedupExpired) rather than passing without a trace.
func (k refRetention) graced() refRetention {
	return refRetention{age: k.age + k.age/8, txs: k.txs + k.txs/8}
}

// pruneDue reports whether the persister, having pruned as of transaction
// lastID at lastTs, should prune again as of id at ts: after an eighth of
// either limit.
func (k refRetention) pruneDue(lastID uint64, lastTs int64, id uint64, ts int64) bool {
	return ts-lastTs >= k.age/8 || (k.txs > 0 && id-lastID >= k.txs/8)
}

// refMark is the id and timestamp of a transaction: the Transactor keeps one
// per 1/1024 of the retention, so that it can tell by id which refs the
// retention has passed.
type refMark struct {
	id uint64
	ts int64
}

// firstKept returns the lowest transaction id whose refs k keeps as of
// transaction next at ts (conservatively: some refs at or above it may be
// past the retention by up to a mark's span).
func (k refRetention) firstKept(marks []refMark, next uint64, ts int64) uint64 {
	var from uint64
	if k.txs > 0 && next > k.txs {
		from = next - k.txs
	}
	for i := len(marks) - 1; i >= 0; i-- {
		if ts-marks[i].ts > k.age { // every transaction before marks[i] is older
			return max(from, marks[i].id)
		}
	}
	return from
}

// refIndex is the Transactor's side of the durable index: it replaces the
// window's map while the index is kept.
type refIndex struct {
	keep  refRetention
	table refTable
	marks []refMark
	// Set by startRun for the Transactor's run.
	ts       int64
	keepFrom uint64 // refs of transactions below it are past the retention
	dropFrom uint64 // ... and past the grace: the table may drop them
	// expired counts retries whose original the table still held past
	// the retention: executed as new transactions (Stats.DedupExpired).
	expired uint64
}

func (x *refIndex) startRun(next uint64, ts int64) {
	x.ts = ts
	if n := len(x.marks); n == 0 || ts-x.marks[n-1].ts >= x.keep.age/1024 {
		x.marks = append(x.marks, refMark{id: next, ts: ts})
	}
	x.keepFrom = x.keep.firstKept(x.marks, next, ts)
	x.dropFrom = x.keep.graced().firstKept(x.marks, next, ts)
	// Marks below the drop point are no longer needed but the last one.
	k := 0
	for k+1 < len(x.marks) && x.marks[k+1].id <= x.dropFrom {
		k++
	}
	if k > 0 {
		x.marks = append(x.marks[:0], x.marks[k:]...)
	}
}

// lookup returns the original of ref for transaction id, if it is within
// the retention (the count limit exactly; the age as of the run's marks).
func (x *refIndex) lookup(id, ref uint64) (uint64, bool) {
	o, ok := x.table.get(refHash(ref))
	if !ok {
		return 0, false
	}
	if o < x.keepFrom || (x.keep.txs > 0 && id-o > x.keep.txs) {
		x.expired++
		return 0, false
	}
	return o, true
}

func (x *refIndex) add(id, ref uint64) { x.table.put(refHash(ref), id, x.dropFrom) }

// refRun encodes runs for the Snapshotter, reusing its buffer.
type refRun struct {
	buf             []byte
	first           uint64
	n               int
	firstTs, lastTs int64
	key             [9]byte
}

func (r *refRun) add(id, ref uint64, ts int64) {
	if r.n == 0 {
		r.buf = append(r.buf[:0], make([]byte, refRunHeader)...)
		r.first, r.firstTs = id, ts
	}
	r.buf = binary.LittleEndian.AppendUint64(r.buf, id)
	r.buf = binary.LittleEndian.AppendUint64(r.buf, ref)
	r.lastTs = ts
	r.n++
}

// setter is a pebble DB or Batch.
type setter interface {
	Set(key, value []byte, opts *pebble.WriteOptions) error
}

// flush writes the run to db (a DB: unsynced) and starts the next.
func (r *refRun) flush(db setter) error {
	if r.n == 0 {
		return nil
	}
	b := r.buf
	binary.LittleEndian.PutUint32(b[4:], uint32(r.n))
	binary.LittleEndian.PutUint64(b[8:], uint64(r.firstTs))
	binary.LittleEndian.PutUint64(b[16:], uint64(r.lastTs))
	binary.LittleEndian.PutUint32(b, crc32.Checksum(b[4:], castagnoli))
	r.key[0] = prefixDedup
	binary.BigEndian.PutUint64(r.key[1:], r.first)
	r.n = 0
	if err := db.Set(r.key[:], b, pebble.NoSync); err != nil {
		return fmt.Errorf("ledger: write dedup index: %w", err)
	}
	return nil
}

// runInfo is a decoded run.
type runInfo struct {
	first, last     uint64
	firstTs, lastTs int64
	entries         []byte // count x {id, ref}
}

func decodeRun(k, v []byte) (runInfo, error) {
	if len(k) != 9 || k[0] != prefixDedup {
		return runInfo{}, errors.New("malformed dedup index key")
	}
	if len(v) < refRunHeader {
		return runInfo{}, fmt.Errorf("%d-byte dedup run", len(v))
	}
	body, err := openRecord(v)
	if err != nil {
		return runInfo{}, err
	}
	n := int(binary.LittleEndian.Uint32(body))
	r := runInfo{firstTs: int64(binary.LittleEndian.Uint64(body[4:])), lastTs: int64(binary.LittleEndian.Uint64(body[12:])), entries: body[20:]}
	if n == 0 || len(r.entries) != n*refRunEntry {
		return runInfo{}, fmt.Errorf("dedup run of %d refs in %d bytes", n, len(r.entries))
	}
	r.first = binary.LittleEndian.Uint64(r.entries)
	r.last = binary.LittleEndian.Uint64(r.entries[len(r.entries)-refRunEntry:])
	if r.first != binary.BigEndian.Uint64(k[1:]) || r.last < r.first || r.lastTs < r.firstTs {
		return runInfo{}, fmt.Errorf("dedup run header (txs %d..%d) does not match its key", r.first, r.last)
	}
	return r, nil
}

// scanRuns calls fn for every run, in id order.
func scanRuns(db *pebble.DB, fn func(k []byte, r runInfo) error) error {
	it, err := prefixIter(db, prefixDedup)
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		r, err := decodeRun(it.Key(), it.Value())
		if err != nil {
			return &CorruptError{Key: clone(it.Key()), Reason: "dedup index: " + err.Error()}
		}
		if err := fn(it.Key(), r); err != nil {
			return err
		}
	}
	return it.Error()
}

// pruneRuns deletes the runs whose every ref is past keep as of transaction
// id at ts: a prefix of the keys, removed with one range deletion.
func pruneRuns(db *pebble.DB, keep refRetention, id uint64, ts int64) error {
	var end []byte
	errStop := errors.New("stop")
	err := scanRuns(db, func(k []byte, r runInfo) error {
		if !keep.expired(r.last, r.lastTs, id, ts) {
			return errStop
		}
		end = append(clone(k), 0) // just past k
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if end == nil {
		return nil
	}
	if err := db.DeleteRange([]byte{prefixDedup}, end, pebble.NoSync); err != nil {
		return fmt.Errorf("ledger: prune dedup index: %w", err)
	}
	return nil
}

// readRuns decodes every run of the index: Open calls it on the read-only
// store, so that a damaged run refuses the directory before anything is
// written.
func readRuns(db *pebble.DB) ([]runInfo, error) {
	var runs []runInfo
	err := scanRuns(db, func(_ []byte, r runInfo) error {
		r.entries = clone(r.entries)
		runs = append(runs, r)
		return nil
	})
	return runs, err
}

// loadRefIndex builds the Transactor's table for a recovered ledger from
// the runs readRuns returned: it prunes the runs retention has passed as of
// the clock now, loads the rest, and writes runs for the refs recovery
// replayed after the snapshot. Open calls it once the directory may be
// written.
func loadRefIndex(db *pebble.DB, cfg *Config, rs *recovered, runs []runInfo, now int64) (*refIndex, error) {
	keep := retentionOf(cfg)
	next := rs.last + 1
	// The refs of the transactions replayed after the loaded snapshot are
	// written again below: cut the runs after it first, so that no
	// transaction is in two runs (a crash may have left runs of the
	// Snapshotter's batches after the snapshot, cut at other ids). Entries
	// after the last transaction kept belong to a torn tail Open dropped:
	// its ids will be used again, so that cut is synced.
	if n := len(runs); n > 0 && runs[n-1].last > rs.snapshot {
		sync := pebble.NoSync
		if runs[n-1].last > rs.last {
			sync = pebble.Sync
		}
		b := db.NewBatch()
		err := cutRuns(db, b, rs.snapshot)
		if err == nil {
			err = b.Commit(sync)
		}
		if err = errors.Join(err, b.Close()); err != nil {
			return nil, fmt.Errorf("ledger: cut dedup index: %w", err)
		}
		for n > 0 && runs[n-1].first > rs.snapshot {
			n--
		}
		runs = runs[:n]
		if n > 0 {
			r := &runs[n-1]
			for len(r.entries) > 0 && binary.LittleEndian.Uint64(r.entries[len(r.entries)-refRunEntry:]) > rs.snapshot {
				r.entries = r.entries[:len(r.entries)-refRunEntry]
			}
			r.last = binary.LittleEndian.Uint64(r.entries[len(r.entries)-refRunEntry:])
		}
	}
	// The index holds every ref from its first Open on: one with the index
	// off deletes the key (markDedupOff), and verify checks no further back.
	if from, err := readDedupFrom(db); err != nil {
		return nil, err
	} else if from == 0 {
		if err := db.Set(dedupFromKey, sealRecord(binary.LittleEndian.AppendUint64(nil, rs.snapshot+1)), pebble.NoSync); err != nil {
			return nil, fmt.Errorf("ledger: write dedup index start: %w", err)
		}
	}
	drop := 0
	for drop < len(runs) && keep.graced().expired(runs[drop].last, runs[drop].lastTs, next, now) {
		drop++
	}
	if drop > 0 {
		end := idKey(prefixDedup, runs[drop-1].first+1)
		if err := db.DeleteRange([]byte{prefixDedup}, end, pebble.NoSync); err != nil {
			return nil, fmt.Errorf("ledger: prune dedup index: %w", err)
		}
		runs = runs[drop:]
	}
	entries := len(rs.replayedRefs) + len(rs.refs)
	for _, r := range runs {
		entries += len(r.entries) / refRunEntry
	}
	x := &refIndex{keep: keep, table: newRefTable(entries)}
	for _, r := range runs {
		x.marks = append(x.marks, refMark{id: r.first, ts: r.firstTs})
	}
	for _, u := range rs.replayedRefs {
		if n := len(x.marks); n == 0 || u.id > x.marks[n-1].id && u.ts-x.marks[n-1].ts >= keep.age/1024 {
			x.marks = append(x.marks, refMark{id: u.id, ts: u.ts})
		}
	}
	x.startRun(next, now)
	for _, r := range runs {
		for e := r.entries; len(e) > 0; e = e[refRunEntry:] {
			if id := binary.LittleEndian.Uint64(e); id >= x.dropFrom {
				x.add(id, binary.LittleEndian.Uint64(e[8:]))
			}
		}
	}
	// The window as of the last transaction (the snapshot's, plus the
	// replay): a directory written with the index off, or before it
	// existed, has no runs for it.
	for _, r := range rs.refs {
		if r.id >= x.dropFrom {
			x.add(r.id, r.ref)
		}
	}
	var run refRun
	for i, u := range rs.replayedRefs {
		x.add(u.id, u.ref)
		run.add(u.id, u.ref, u.ts)
		if run.n == refRunMax || i == len(rs.replayedRefs)-1 {
			if err := run.flush(db); err != nil {
				return nil, err
			}
		}
	}
	rs.replayedRefs = nil
	return x, nil
}

// readDedupFrom returns the first transaction whose ref the index holds
// (if non-duplicate and covered by a snapshot, and not pruned), or 0 if
// unknown: the index was off at some Open since, or never on.
func readDedupFrom(db *pebble.DB) (uint64, error) {
	v, closer, err := db.Get(dedupFromKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("ledger: read dedup index start: %w", err)
	}
	defer closer.Close()
	body, err := openRecord(v)
	if err == nil && len(body) != 8 {
		err = fmt.Errorf("%d-byte value", len(body))
	}
	if err != nil {
		return 0, &CorruptError{Key: clone(dedupFromKey), Reason: "dedup index start: " + err.Error()}
	}
	return binary.LittleEndian.Uint64(body), nil
}

// markDedupOff records that an Open runs without the index: the
// Snapshotter writes no runs, so the index no longer holds every ref. The
// deletion is durable before any snapshot that covers a missing ref (its
// manifest is a synced write after it).
func markDedupOff(db *pebble.DB) error {
	if err := db.Delete(dedupFromKey, pebble.NoSync); err != nil {
		return fmt.Errorf("ledger: write dedup index start: %w", err)
	}
	return nil
}

// cutRuns deletes the idempotency-index entries of transactions after the
// cut: whole runs from after+1 on, and the tail of the run that holds it.
func cutRuns(db *pebble.DB, b *pebble.Batch, after uint64) error {
	it, err := prefixIter(db, prefixDedup)
	if err != nil {
		return err
	}
	defer it.Close()
	if it.SeekLT(idKey(prefixDedup, after+1)) {
		r, err := decodeRun(it.Key(), it.Value())
		if err != nil {
			return &CorruptError{Key: clone(it.Key()), Reason: "dedup index: " + err.Error()}
		}
		if r.last > after {
			var run refRun
			for e := r.entries; len(e) > 0 && binary.LittleEndian.Uint64(e) <= after; e = e[refRunEntry:] {
				run.add(binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint64(e[8:]), r.firstTs)
			}
			run.lastTs = r.lastTs
			if err := run.flush(b); err != nil {
				return err
			}
		}
	}
	return b.DeleteRange(idKey(prefixDedup, after+1), prefixEnd(prefixDedup), nil)
}

// wallNow is the Transactor's clock outside tests.
func wallNow(cfg *Config) int64 {
	if cfg.now != nil {
		return cfg.now()
	}
	return time.Now().UnixNano()
}
