package ledger

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

// fillLedger writes mixed transactions (deposits, transfers, composites,
// failures, duplicates) to the ledger in cfg.Dir up to tx n, creating its
// accounts first if it is new (txs 1 .. MaxAccounts-1), and closes it.
// Tx id i+1 is op i of the mix.
func fillLedger(t *testing.T, cfg Config, n int) {
	t.Helper()
	l, err := Open(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	x, err := l.Indexes()
	require.NoError(t, err)
	last := x.Committed
	if last == 0 {
		last = createAccounts(t, l, cfg.MaxAccounts)
	}
	for i := int(last); i < n; i++ {
		u := uint64(i)
		var op Op
		switch i % 5 {
		case 0, 1:
			op = Deposit{Account: 1 + u%7, Amount: 10 + u%13, UserRef: 1000 + u}
		case 2:
			op = Transfer{From: 1 + u%7, To: 1 + (u+3)%7, Amount: 7}
		case 3:
			op = Composite{Legs: []Leg{{Account: 2, Delta: -3}, {Account: 4, Delta: 2}, {Account: 5, Delta: 1}}, Flags: NoNegative}
		case 4:
			op = Withdrawal{Account: 1 + u%7, Amount: 1 << 40, UserRef: 1000 + u - 4} // fails: duplicate or funds
		}
		id, err := l.Submit(op)
		require.NoError(t, err)
		last = id
	}
	require.NoError(t, l.Wait(ctx, last, Snapshot))
	require.NoError(t, l.Close())
}

func TestVerifyClean(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 300, WALRetention: -1, WALMaxBatch: 32}
	fillLedger(t, cfg, 1000)
	rep, err := verifyDir(nil, cfg.Dir)
	require.NoError(t, err)
	require.Empty(t, rep.Findings)
	require.True(t, rep.FromZero)
	require.Equal(t, TxID(1), rep.FirstTx)
	require.Equal(t, TxID(1000), rep.LastTx)
	require.Equal(t, uint64(1000), rep.Transactions)
	require.Nil(t, rep.TornTail)
	require.NotEmpty(t, rep.Snapshots)
	for _, s := range rep.Snapshots {
		require.True(t, s.Valid && s.Replayed, "%+v", s)
	}
	// Verify changed nothing: the ledger still opens where it was.
	l, err := Open(cfg)
	require.NoError(t, err)
	x, _ := l.Indexes()
	require.Equal(t, TxID(1000), x.Committed)
	require.NoError(t, l.Close())
}

// With the WAL pruned, the oldest retained snapshot anchors the replay.
func TestVerifyPrunedWAL(t *testing.T) {
	// Retention removes whole segments: small ones, snapshots further
	// apart, and a retention that keeps the older snapshot in the WAL.
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 2000, WALRetention: 2500, WALMaxBatch: 64, WALSegmentSize: 256 << 10}
	fillLedger(t, cfg, 12000)
	rep, err := verifyDir(nil, cfg.Dir)
	require.NoError(t, err)
	require.False(t, rep.FromZero)
	require.Greater(t, rep.FirstTx, TxID(1))
	require.Equal(t, TxID(12000), rep.LastTx)
	replayed := 0
	for _, s := range rep.Snapshots {
		require.True(t, s.Valid)
		if s.Replayed {
			replayed++
		}
	}
	require.Positive(t, replayed)
}

// setValue overwrites one record of the closed ledger in dir.
func setValue(t *testing.T, dir string, key []byte, mutate func([]byte) []byte) {
	t.Helper()
	withDB(t, dir, func(db *pebble.DB) { rewriteValue(t, db, key, mutate, pebble.Sync) })
}

// rewriteValue replaces key's value in db by mutate of a copy of it.
func rewriteValue(t *testing.T, db *pebble.DB, key []byte, mutate func([]byte) []byte, opts *pebble.WriteOptions) {
	t.Helper()
	v, closer, err := db.Get(key)
	require.NoError(t, err)
	v = mutate(clone(v))
	closer.Close()
	require.NoError(t, db.Set(key, v, opts))
}

// A snapshot that is internally valid (checksums, zero sum) but disagrees
// with the WAL is found: Open would have trusted it.
func TestVerifyFindsWrongSnapshot(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALRetention: -1}
	fillLedger(t, cfg, 100)
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		r, err := recoverState(db, &Config{Dir: cfg.Dir, MaxAccounts: 8, DedupWindow: DefaultDedupWindow})
		require.NoError(t, err)
		r.bal[cell(1, CreditsPosted)].Add(1) // debits and credits still agree
		r.bal[cell(2, DebitsPosted)].Add(1)
		_, err = writeSnapshot(db, &cfg, &snapshotData{txID: 100, refs: r.refs, accounts: r.accts.n}, r.bal, func() uint64 { return 100 }, nil, nil)
		require.NoError(t, err)
	})
	rep, err := verifyDir(nil, cfg.Dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Len(t, rep.Findings, 1)
	require.Equal(t, idKey(prefixSnapshot, 100), rep.Findings[0].Key)
	require.Equal(t, []snapshotCheck{{TxID: 100, Valid: true}}, rep.Snapshots)
}

func TestVerifyTornTailIsNoFinding(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALMaxBatch: 8}
	fillLedger(t, cfg, 50)
	bs := walBatches(t, cfg.Dir)
	last := bs[len(bs)-1]
	flipByte(t, last.file, last.off+19+int64(last.size)/2)
	rep, err := verifyDir(nil, cfg.Dir)
	require.NoError(t, err)
	require.Equal(t, &TornTail{File: walDir + "/" + filepath.Base(last.file), Offset: last.off, Dropped: rep.TornTail.Dropped, LastKept: TxID(last.first - 1)}, rep.TornTail)
	require.Positive(t, rep.TornTail.Dropped)
	require.Equal(t, TxID(last.first-1), rep.LastTx)
}

func TestOfflineToolsRefuseNonLedger(t *testing.T) {
	_, err := verifyDir(nil, t.TempDir()+"/missing")
	require.Error(t, err)
	// An empty directory (or one of something else) is no ledger, and the
	// tools leave it as it was: no LOCK file appears in it.
	empty := t.TempDir()
	_, err = verifyDir(nil, empty)
	require.ErrorIs(t, err, ErrNoLedger)
	require.ErrorIs(t, dumpDir(nil, empty, 0, 0, nil), ErrNoLedger)
	left, err := os.ReadDir(empty)
	require.NoError(t, err)
	require.Empty(t, left)
	dir := t.TempDir()
	withDB(t, dir, func(db *pebble.DB) { require.NoError(t, db.Set([]byte("x"), nil, pebble.Sync)) })
	_, err = verifyDir(nil, dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, dumpDir(nil, dir, 0, 0, nil), ErrCorrupt)
}
