package ledger

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// VerifyReport is what Verify found in a ledger directory.
type VerifyReport struct {
	MaxAccounts  uint64
	FirstTx      TxID // first transaction in the WAL; 0 if the WAL is empty
	LastTx       TxID // last transaction in a decodable WAL batch
	Batches      int  // WAL batches read, the torn tail included
	Transactions uint64
	// FromZero is true when the WAL starts at transaction 1, so every
	// resulting balance was checked against a replay from zero.
	FromZero bool
	// TornTail is the key of a final WAL batch that fails to decode: the
	// remains of a write cut short by a crash, never acknowledged. Open
	// discards it; Verify does not count it as a finding.
	TornTail  []byte
	Snapshots []SnapshotCheck
	// Findings lists every inconsistency, in key order. Verify returns a
	// non-nil error exactly when it is non-empty.
	Findings []*CorruptError
}

// SnapshotCheck is the verdict on one persisted snapshot.
type SnapshotCheck struct {
	TxID TxID
	// Valid: the manifest, every chunk checksum, the zero balance sum and
	// the dedup window verify, so Open could load it.
	Valid bool
	// Replayed: the WAL covers the snapshot and its balances equal the
	// replay up to TxID. A valid snapshot older than the retained WAL
	// cannot be compared.
	Replayed bool
}

// Verify checks a closed ledger directory without changing it: the meta
// record; every WAL batch's checksum and structure; contiguous transaction
// ids; the zero sum of every transaction; that every entry's resulting
// balance continues the account's previous one; every snapshot, and that it
// equals the WAL replay up to its transaction. It reads past damage to find
// all of it. The error is nil if the report has no findings; otherwise it
// joins the findings (each a *CorruptError, matching ErrCorrupt). Errors
// opening the directory are returned with a nil report; a directory of
// another format version fails with ErrIncompatible.
func Verify(dir string) (*VerifyReport, error) { return verifyFS(nil, dir) }

func verifyFS(fs vfs.FS, dir string) (*VerifyReport, error) {
	db, m, err := openOffline(fs, dir)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	v := &verifier{rep: &VerifyReport{MaxAccounts: m.MaxAccounts}, bal: make([]int64, m.MaxAccounts), known: make([]bool, m.MaxAccounts)}
	if err := v.loadSnapshots(db); err != nil {
		return nil, err
	}
	if err := v.scan(db); err != nil {
		return nil, err
	}
	for _, s := range v.snaps[v.next:] {
		v.finding(idKey(prefixSnapshot, s.id), s.id, s.id, "snapshot is newer than the WAL")
	}
	if v.nKnown == uint64(len(v.bal)) {
		var sum int64
		for _, b := range v.bal {
			sum += b
		}
		if sum != 0 {
			v.finding([]byte{prefixWAL}, 0, uint64(v.rep.LastTx), "balances sum to %d after replay", sum)
		}
	}
	errs := make([]error, len(v.rep.Findings))
	for i, f := range v.rep.Findings {
		errs[i] = f
	}
	return v.rep, errors.Join(errs...)
}

type snapState struct {
	id   uint64
	bal  []int64
	refs []refEntry
	rep  int // index in VerifyReport.Snapshots
}

// verifier replays the WAL tracking which balances are known: all of them
// from transaction 1 or a snapshot, none after a damaged stretch until an
// account's next entry (or a snapshot) re-anchors it.
type verifier struct {
	rep    *VerifyReport
	bal    []int64
	known  []bool
	nKnown uint64
	last   uint64 // last transaction replayed
	snaps  []snapState
	next   int // first snapshot not yet reached by the replay
}

func (v *verifier) finding(key []byte, first, last uint64, format string, args ...any) {
	v.rep.Findings = append(v.rep.Findings, &CorruptError{Key: clone(key), FirstTx: TxID(first), LastTx: TxID(last), Reason: fmt.Sprintf(format, args...)})
}

func (v *verifier) forget() {
	clear(v.known)
	v.nKnown = 0
}

func (v *verifier) learn(a uint64, b int64) {
	if !v.known[a] {
		v.known[a] = true
		v.nKnown++
	}
	v.bal[a] = b
}

// loadSnapshots checks every snapshot as Open would and keeps the valid
// ones, in id order, for comparison with the replay.
func (v *verifier) loadSnapshots(db *pebble.DB) error {
	it, err := prefixIter(db, prefixSnapshot)
	if err != nil {
		return err
	}
	defer it.Close()
	cfg := &Config{MaxAccounts: v.rep.MaxAccounts, DedupWindow: DefaultDedupWindow}
	for ok := it.First(); ok; ok = it.Next() {
		id, ok := parseIDKey(prefixSnapshot, it.Key())
		if !ok {
			v.finding(it.Key(), 0, 0, "malformed snapshot key")
			continue
		}
		rs := &recovered{}
		v.rep.Snapshots = append(v.rep.Snapshots, SnapshotCheck{TxID: TxID(id)})
		if err := loadSnapshot(db, cfg, id, it.Value(), rs); err != nil {
			v.finding(it.Key(), id, id, "snapshot: %v", err)
			continue
		}
		v.rep.Snapshots[len(v.rep.Snapshots)-1].Valid = true
		v.snaps = append(v.snaps, snapState{id: id, bal: rs.bal, refs: rs.dedup.fifo.entries(), rep: len(v.rep.Snapshots) - 1})
	}
	return it.Error()
}

// reachSnapshots compares every snapshot up to the replayed transaction
// with the replay, and adopts its balances where the replay knows none.
func (v *verifier) reachSnapshots(refOf func(uint64) (uint64, bool)) {
	for ; v.next < len(v.snaps) && v.snaps[v.next].id <= v.last; v.next++ {
		s := &v.snaps[v.next]
		if s.id < v.last {
			continue // before the retained WAL, or inside a damaged stretch
		}
		complete := v.nKnown == uint64(len(v.bal))
		mismatch := 0
		for a, b := range s.bal {
			if v.known[a] && v.bal[a] != b {
				if mismatch == 0 {
					v.finding(idKey(prefixSnapshot, s.id), s.id, s.id, "account %d is %d in the snapshot, %d in the WAL replay", a, b, v.bal[a])
				}
				mismatch++
			}
			v.learn(uint64(a), b)
		}
		for _, r := range s.refs {
			if ref, ok := refOf(r.id); ok && ref != r.ref {
				v.finding(idKey(prefixSnapshot, s.id), s.id, s.id, "dedup window names ref %d for tx %d, the WAL %d", r.ref, r.id, ref)
				break
			}
		}
		v.rep.Snapshots[s.rep].Replayed = complete && mismatch == 0
	}
}

func (v *verifier) scan(db *pebble.DB) error {
	it, err := prefixIter(db, prefixWAL)
	if err != nil {
		return err
	}
	defer it.Close()
	// Dedup refs of the WAL, kept only for the ids the snapshots name.
	want := map[uint64]bool{}
	for _, s := range v.snaps {
		for _, r := range s.refs {
			want[r.id] = true
		}
	}
	walRefs := map[uint64]uint64{}
	refOf := func(id uint64) (uint64, bool) { r, ok := walRefs[id]; return r, ok }

	var t walTx
	var expect uint64 // first id of the next batch; 0 before the first
	for ok := it.First(); ok; ok = it.Next() {
		key := clone(it.Key())
		v.rep.Batches++
		first, kok := parseIDKey(prefixWAL, key)
		b, err := openBatch(it.Value())
		if err == nil && (!kok || b.first != first) {
			err = fmt.Errorf("key names tx %d, batch starts at %d", first, b.first)
		}
		if err == nil {
			err = v.batch(&b, &t, expect, key, want, walRefs, refOf)
		}
		if err == nil {
			expect = b.last() + 1
			continue
		}
		if !it.Next() {
			if ierr := it.Error(); ierr != nil {
				return ierr
			}
			if n := len(v.snaps); n > 0 && kok && v.snaps[n-1].id >= first {
				// A snapshot proves it was synced: damage, as Open says.
				v.finding(key, first, v.snaps[n-1].id, "%v (covered by snapshot %d, so not a torn write)", err, v.snaps[n-1].id)
				return nil
			}
			v.rep.TornTail = key
			return nil
		}
		next, _ := parseIDKey(prefixWAL, it.Key())
		if v.rep.FirstTx == 0 {
			v.rep.FirstTx = TxID(first)
		}
		v.finding(key, first, next-1, "%v", err)
		v.forget()
		expect, v.last = next, next-1
		it.Prev()
	}
	return it.Error()
}

// batch replays one checksum-valid batch, recording findings for ids and
// balances that do not continue. Its error means the batch is undecodable.
func (v *verifier) batch(b *batchReader, t *walTx, expect uint64, key []byte, want map[uint64]bool, walRefs map[uint64]uint64, refOf func(uint64) (uint64, bool)) error {
	// Decode the whole batch first: an undecodable batch changes nothing.
	c := *b
	for {
		ok, err := c.next(t)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
	}
	switch {
	case expect == 0:
		v.rep.FirstTx = TxID(b.first)
		v.rep.FromZero = b.first == 1
		if v.rep.FromZero {
			for a := range v.known {
				v.learn(uint64(a), 0)
			}
		}
		v.last = b.first - 1
		v.reachSnapshots(refOf) // a snapshot just before the WAL anchors it
	case b.first != expect:
		v.finding(key, expect, b.first-1, "WAL batch starts at tx %d, want %d", b.first, expect)
		if b.first > expect {
			v.forget()
		}
		v.last = b.first - 1
	}
	n := uint64(len(v.bal))
	for {
		ok, _ := b.next(t)
		if !ok {
			break
		}
		v.rep.Transactions++
		for i := 0; i < t.n; i++ {
			e := t.entry(i)
			if e.Account >= n {
				v.finding(key, t.id, t.id, "account %d out of range", e.Account)
				continue
			}
			if v.known[e.Account] {
				if nb, ok := addInt64(v.bal[e.Account], e.Delta); !ok || nb != e.Balance {
					v.finding(key, t.id, t.id, "account %d balance %d%+d recorded as %d", e.Account, v.bal[e.Account], e.Delta, e.Balance)
				}
			}
			v.learn(e.Account, e.Balance)
		}
		if want[t.id] {
			ref := t.userRef
			if t.fail == Duplicate {
				ref = 0 // a duplicate never enters the window
			}
			walRefs[t.id] = ref
		}
		v.last = t.id
		v.rep.LastTx = TxID(t.id)
		if v.next < len(v.snaps) && v.snaps[v.next].id <= t.id {
			v.reachSnapshots(refOf)
		}
	}
	return nil
}
