package ledger

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

type ledgerState struct {
	x       Indexes
	bal     []int64
	results []Result
}

func captureState(t *testing.T, l *Ledger) ledgerState {
	t.Helper()
	x, err := l.Indexes()
	require.NoError(t, err)
	s := ledgerState{x: x, bal: balances(t, l)}
	for id := TxID(1); id <= x.Committed; id++ {
		r, err := l.Result(id)
		require.NoError(t, err)
		s.results = append(s.results, r)
	}
	return s
}

// submitMany submits n deposits and transfers over accounts 1..7, which it
// creates first if they do not exist.
func submitMany(t *testing.T, l *Ledger, n int, seed uint64) TxID {
	t.Helper()
	if _, err := l.Lookup(1); errors.Is(err, ErrAccountNotFound) {
		createAccounts(t, l, 8)
	}
	var last TxID
	for i := range n {
		var op Op = Deposit{Account: 1 + (seed+uint64(i))%7, Amount: 1 + uint64(i)%13, UserRef: seed*1_000_000 + uint64(i)}
		if i%3 == 1 {
			op = Transfer{From: 1 + uint64(i)%7, To: 1 + (uint64(i)+1)%7, Amount: 5}
		}
		id, err := l.Submit(op)
		require.NoError(t, err)
		last = id
	}
	require.NoError(t, l.Wait(context.Background(), last, Snapshot))
	return last
}

func TestReopenIdentical(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1}
	l, err := Open(cfg)
	require.NoError(t, err)
	submitMany(t, l, 500, 1)
	before := captureState(t, l)
	require.NoError(t, l.Close())

	l, err = Open(cfg)
	require.NoError(t, err)
	defer l.Close()
	require.Equal(t, uint64(7+500), l.recovered.replayed, "7 accounts, 500 ops")
	require.Equal(t, before, captureState(t, l))
	// Idempotency survives the restart.
	r, err := l.SubmitAndWait(context.Background(), Deposit{Account: 3, Amount: 9, UserRef: 1_000_000 + 42}, Committed)
	require.NoError(t, err)
	require.Equal(t, Duplicate, r.Fail)
	require.Equal(t, TxID(7+43), r.DupOf)
	require.Equal(t, TxID(7+501), r.ID)
}

func TestReopenSnapshotPlusWAL(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 300, DedupWindow: 10_000}
	l, err := Open(cfg)
	require.NoError(t, err)
	submitMany(t, l, 1000, 1)
	submitMany(t, l, 50, 2) // fewer than SnapshotEvery: stays in the WAL only
	before := captureState(t, l)
	require.NoError(t, l.Close()) // waits for an in-progress snapshot

	l, err = Open(cfg)
	require.NoError(t, err)
	rec := l.recovered
	require.Positive(t, rec.snapshot)
	// Usually <= 1000, but a snapshot skipped while the previous one was
	// still being written is taken at a later batch, possibly the last.
	require.LessOrEqual(t, rec.snapshot, uint64(7+1050))
	require.Equal(t, 7+1050-rec.snapshot, rec.replayed)
	require.Equal(t, before, captureState(t, l))
	// A ref first used before the snapshot, and one after it.
	for _, i := range []uint64{9, 999} {
		r, err := l.SubmitAndWait(context.Background(), Deposit{Account: 2, Amount: 1, UserRef: 1_000_000 + i}, Computed)
		require.NoError(t, err)
		require.Equal(t, Duplicate, r.Fail, "ref %d", i)
		require.Equal(t, TxID(7+i+1), r.DupOf)
	}
	require.NoError(t, l.Close())
}

func TestRetentionPrunesWAL(t *testing.T) {
	// Retention removes whole segments: small ones, snapshots further apart.
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 2000, WALRetention: 100, WALMaxBatch: 64, WALSegmentSize: 256 << 10}
	l, err := Open(cfg)
	require.NoError(t, err)
	last := submitMany(t, l, 12000, 1)
	want, err := l.Result(last)
	require.NoError(t, err)
	x0, _ := l.Indexes()
	var bal []int64
	for a := range uint64(8) {
		b, _ := l.Balance(a)
		bal = append(bal, b)
	}
	require.NoError(t, l.Close())
	l, err = Open(cfg)
	require.NoError(t, err)
	defer l.Close()
	_, err = l.Result(1)
	require.ErrorIs(t, err, ErrNotFound)
	r, err := l.Result(last)
	require.NoError(t, err)
	require.Equal(t, want, r)
	x, _ := l.Indexes()
	require.Equal(t, x0, x)
	for a := range uint64(8) {
		b, _ := l.Balance(a)
		require.Equal(t, bal[a], b)
	}
}

func TestIncompatibleDirectory(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Config{Dir: dir, MaxAccounts: 8})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	_, err = Open(Config{Dir: dir, MaxAccounts: 9})
	require.ErrorIs(t, err, ErrIncompatible)
	_, err = Open(Config{Dir: dir}) // default MaxAccounts differs too
	require.ErrorIs(t, err, ErrIncompatible)
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Dir: "x", MaxAccounts: 1},
		{Dir: "x", RingSize: -1},
		{Dir: "x", WALMaxBatch: -3},
		{Dir: "x", MaxEntries: MaxLegs + 1},
		{Dir: "x", WaitStrategy: 9},
	} {
		_, err := Open(cfg)
		require.ErrorIs(t, err, ErrConfig, "%+v", cfg)
	}
}

// withDB runs f on the closed ledger directory's pebble store.
func withDB(t *testing.T, dir string, f func(db *pebble.DB)) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	require.NoError(t, err)
	f(db)
	require.NoError(t, db.Close())
}

// A batch whose checksums hold but whose resulting balance does not
// continue the account's previous one refuses to open, naming the segment,
// the record's offset and the transaction; Verify finds the same.
func TestInconsistentBalanceRefusesToOpen(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALMaxBatch: 8}
	fillLedger(t, cfg, 40)
	b := walBatches(t, cfg.Dir)[2]
	breakResult(t, b)
	before := dirDigest(t, cfg.Dir)
	_, err := Open(cfg)
	requireBrokenResult(t, err, b)
	require.Equal(t, before, dirDigest(t, cfg.Dir))
	rep, err := verifyDir(nil, cfg.Dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Equal(t, TxID(b.first), rep.Findings[0].FirstTx)
	require.Contains(t, rep.Findings[0].Reason, "recorded as")
}

// A checksum-valid batch that skips ids is refused by Open and Verify.
func TestGapRefusesToOpen(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALMaxBatch: 8}
	fillLedger(t, cfg, 40)
	b := walBatches(t, cfg.Dir)[2]
	patchBatch(t, b, func(batch []byte) {
		binary.LittleEndian.PutUint64(batch[4:], b.first+5)
		resealBatch(batch)
	})
	_, err := Open(cfg)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, TxID(b.first), ce.FirstTx)
	require.Contains(t, ce.Reason, "want")
	_, err = verifyDir(nil, cfg.Dir)
	require.ErrorAs(t, err, &ce)
	require.Equal(t, TxID(b.first), ce.FirstTx)
}

func TestOtherFormatVersionRefused(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8}
	l, err := Open(cfg)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		rec, err := encodeMsgpack(meta{FormatVersion: formatVersion + 1, MaxAccounts: 8, Fingerprint: fingerprint(8)})
		require.NoError(t, err)
		require.NoError(t, db.Set(metaKey, rec, pebble.Sync))
	})
	_, err = Open(cfg)
	require.ErrorIs(t, err, ErrIncompatible)
	require.Contains(t, err.Error(), "format version")
}

// firstEntryOffset is the offset in batch of its first entry.
func firstEntryOffset(t *testing.T, batch []byte) int {
	t.Helper()
	b, err := openBatch(batch)
	require.NoError(t, err)
	var tx walTx
	for {
		ok, err := b.next(&tx)
		require.NoError(t, err)
		require.True(t, ok, "no entry in the batch")
		if tx.n > 0 {
			return cap(batch) - cap(tx.raw)
		}
	}
}

// Account records hold runs of consecutive slots. A record is read up to
// the next one's first slot (a later first slot holds the newer accounts),
// a slot no record covers is an error, and Open's rewrite from a slot drops
// every record from there on, so stale accounts a crash or a cut log left
// in a record that straddles it are not read.
func TestAccountRecordRuns(t *testing.T) {
	acct := func(id uint64) acctMeta { return acctMeta{id: id, ledger: 1, code: uint16(id)} }
	run := func(first uint64, ids ...uint64) func(db *pebble.DB) {
		return func(db *pebble.DB) {
			ms := make([]acctMeta, len(ids))
			for i, id := range ids {
				ms[i] = acct(id)
			}
			require.NoError(t, db.Set(idKey(prefixAccount, first), encodeAccountRecord(ms...), pebble.NoSync))
		}
	}
	read := func(db *pebble.DB, accounts uint64) ([]uint64, error) {
		var ids []uint64
		err := readAccountRecords(db, accounts, func(m acctMeta) error { ids = append(ids, m.id); return nil })
		return ids, err
	}
	withDB(t, t.TempDir(), func(db *pebble.DB) {
		run(1, 11, 12, 13, 14, 15, 16, 17, 18, 19)(db)
		run(5, 25, 26, 27)(db)
		run(8, 38, 39, 40, 41)(db)
		ids, err := read(db, 11)
		require.NoError(t, err)
		require.Equal(t, []uint64{11, 12, 13, 14, 25, 26, 27, 38, 39, 40}, ids)
		_, err = read(db, 13)
		require.ErrorContains(t, err, "slot 12 missing")
	})
	withDB(t, t.TempDir(), func(db *pebble.DB) {
		run(1, 11, 12, 13)(db)
		run(5, 15)(db)
		_, err := read(db, 6)
		require.ErrorContains(t, err, "slot 4 missing")
	})
	withDB(t, t.TempDir(), func(db *pebble.DB) {
		run(2, 12)(db)
		_, err := read(db, 3)
		require.ErrorContains(t, err, "slot 1 missing")
	})
	withDB(t, t.TempDir(), func(db *pebble.DB) {
		tab := newAccountTable(16)
		for id := uint64(1); id <= 7; id++ {
			tab.insert(acct(id))
		}
		run(1, 1, 2)(db)
		run(3, 3, 4, 105, 106, 107)(db) // slots 5.. stale
		run(8, 108, 109)(db)
		run(12, 112)(db)
		require.NoError(t, writeAccountRecords(db, tab, 5, true))
		ids, err := read(db, 8)
		require.NoError(t, err)
		require.Equal(t, []uint64{1, 2, 3, 4, 5, 6, 7}, ids)
		_, err = read(db, 13)
		require.ErrorContains(t, err, "slot 8 missing", "the rewrite dropped the records from slot 5 on")
	})
}

// TestAccountRecordsHold: Open skips rewriting the account records only
// when they read as the rewrite would leave them.
func TestAccountRecordsHold(t *testing.T) {
	db, err := pebble.Open(t.TempDir(), &pebble.Options{Logger: quietLogger{}})
	require.NoError(t, err)
	defer db.Close()
	accts := newAccountTable(100)
	for id := uint64(1); id <= 20; id++ {
		accts.insert(acctMeta{id: 100 + id, ledger: 1})
	}
	hold := func(from uint64) bool {
		ok, err := accountRecordsHold(db, accts, from)
		require.NoError(t, err)
		if ok && from == 1 { // what Open would read back
			s := uint64(1)
			require.NoError(t, readAccountRecords(db, accts.n, func(m acctMeta) error {
				if s >= from {
					require.Equal(t, accts.meta[s], m, "slot %d", s)
				}
				s++
				return nil
			}))
		}
		return ok
	}
	require.False(t, hold(1), "no records")
	require.True(t, hold(accts.n), "nothing to write, no record")
	require.NoError(t, writeAccountRecords(db, accts, 1, true))
	require.True(t, hold(1))
	require.True(t, hold(7))
	// Overlapping records that agree, as a Snapshotter's and Open's.
	require.NoError(t, db.Set(idKey(prefixAccount, 5), encodeAccountRecord(accts.meta[5:accts.n]...), nil))
	require.True(t, hold(1))
	// One that disagrees where it holds slots from on.
	other := append([]acctMeta(nil), accts.meta[5:accts.n]...)
	other[2].code = 9
	require.NoError(t, db.Set(idKey(prefixAccount, 5), encodeAccountRecord(other...), nil))
	require.False(t, hold(1))
	require.True(t, hold(8), "slot 7 is before from")
	// A later record hides the earlier one's tail: slots past it are held
	// by none (readAccountRecords finds them missing).
	require.NoError(t, db.Set(idKey(prefixAccount, 5), encodeAccountRecord(accts.meta[5:9]...), nil))
	require.False(t, hold(1))
	require.False(t, hold(9))
	require.NoError(t, writeAccountRecords(db, accts, 1, true))
	require.True(t, hold(1))
	// A stale record past the last slot: the rewrite deletes it.
	require.NoError(t, db.Set(idKey(prefixAccount, accts.n), encodeAccountRecord(accts.meta[1:2]...), nil))
	require.False(t, hold(1))
	require.False(t, hold(accts.n))
	require.NoError(t, writeAccountRecords(db, accts, 1, true))
	// A slot no record holds.
	require.NoError(t, db.DeleteRange(idKey(prefixAccount, 1), idKey(prefixAccount, 2), nil))
	require.False(t, hold(1))
	// A damaged record.
	require.NoError(t, writeAccountRecords(db, accts, 1, true))
	require.NoError(t, db.Set(idKey(prefixAccount, 3), []byte("junk"), nil))
	require.False(t, hold(1))
}

// An apply error early in a log much longer than the replay's ring of
// decoded groups stops the reader, which by then waits for room: Open
// returns the error naming the damaged batch, and no goroutine outlives it
// (goleak, TestMain).
func TestReplayErrorStopsReader(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALMaxBatch: 8}
	fillLedger(t, cfg, 3*replayGroups*touchAhead)
	bs := walBatches(t, cfg.Dir)
	b := bs[2]
	require.Greater(t, bs[len(bs)-1].last-b.last, uint64(2*replayGroups*touchAhead), "the log after the damage fills the ring")
	breakResult(t, b)
	_, err := Open(cfg)
	requireBrokenResult(t, err, b)
}

// requireBrokenResult asserts that err is the refusal of batch b after
// breakResult.
func requireBrokenResult(t *testing.T, err error, b batchAt) {
	t.Helper()
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, TxID(b.first), ce.FirstTx)
	require.Equal(t, b.off, ce.Offset)
	require.Contains(t, ce.Reason, "recorded as")
}

// breakResult adds one to the resulting value of the first entry in batch
// b (17 bytes into the entry) and reseals the batch: its checksums hold,
// its balance does not continue the account's previous one.
func breakResult(t *testing.T, b batchAt) {
	t.Helper()
	patchBatch(t, b, func(batch []byte) {
		at := firstEntryOffset(t, batch) + 17
		binary.LittleEndian.PutUint64(batch[at:], binary.LittleEndian.Uint64(batch[at:])+1)
		resealBatch(batch)
	})
}
