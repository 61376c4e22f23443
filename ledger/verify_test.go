package ledger

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

// fillLedger writes n mixed transactions (deposits, transfers, composites,
// failures, duplicates) to a new ledger in cfg.Dir and closes it.
func fillLedger(t *testing.T, cfg Config, n int) {
	t.Helper()
	l, err := Open(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	var last TxID
	for i := range n {
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
	rep, err := Verify(cfg.Dir)
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
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 200, WALRetention: 100, WALMaxBatch: 16}
	fillLedger(t, cfg, 2000)
	rep, err := Verify(cfg.Dir)
	require.NoError(t, err)
	require.False(t, rep.FromZero)
	require.Greater(t, rep.FirstTx, TxID(1))
	require.Equal(t, TxID(2000), rep.LastTx)
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
	withDB(t, dir, func(db *pebble.DB) {
		v, closer, err := db.Get(key)
		require.NoError(t, err)
		v = mutate(clone(v))
		closer.Close()
		require.NoError(t, db.Set(key, v, pebble.Sync))
	})
}

func TestVerifyFindsEveryDamagedBatch(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALMaxBatch: 8}
	fillLedger(t, cfg, 300)
	var keys [][]byte
	withDB(t, cfg.Dir, func(db *pebble.DB) { keys = walKeys(t, db) })
	require.Greater(t, len(keys), 6)
	for _, k := range [][]byte{keys[1], keys[4]} {
		setValue(t, cfg.Dir, k, func(v []byte) []byte { v[len(v)/2] ^= 0x10; return v })
	}
	rep, err := Verify(cfg.Dir)
	require.ErrorIs(t, err, ErrCorrupt)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.Len(t, rep.Findings, 2)
	require.Equal(t, keys[1], rep.Findings[0].Key)
	require.Equal(t, keys[4], rep.Findings[1].Key)
	f, _ := parseIDKey(prefixWAL, keys[2])
	require.Equal(t, TxID(f-1), rep.Findings[0].LastTx)
	require.Equal(t, TxID(300), rep.LastTx, "reads past the damage")
}

// A checksum-valid batch whose recorded balance does not continue the
// account's previous one is found, as is a WAL gap.
func TestVerifyFindsBalanceAndGap(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1}
	fillLedger(t, cfg, 20)
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		val, _ := encodeBatch(nil, []txRecord{{id: 21, kind: KindDeposit, n: 2, inline: [2]Entry{{0, -1, 12345}, {1, 1, 1}}}}, walMaxBytes)
		require.NoError(t, db.Set(idKey(prefixWAL, 21), val, pebble.Sync))
		val, _ = encodeBatch(nil, []txRecord{{id: 30, kind: KindWithdrawal, fail: InsufficientFunds}}, walMaxBytes)
		require.NoError(t, db.Set(idKey(prefixWAL, 30), val, pebble.Sync))
	})
	rep, err := Verify(cfg.Dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.GreaterOrEqual(t, len(rep.Findings), 2)
	require.Equal(t, TxID(21), rep.Findings[0].FirstTx)
	require.Contains(t, rep.Findings[0].Reason, "recorded as")
	var gap bool
	for _, f := range rep.Findings {
		gap = gap || (f.FirstTx == 22 && f.LastTx == 29)
	}
	require.True(t, gap, "%v", err)
}

// A snapshot that is internally valid (checksums, zero sum) but disagrees
// with the WAL is found: Open would have trusted it.
func TestVerifyFindsWrongSnapshot(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALRetention: -1}
	fillLedger(t, cfg, 100)
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		r, err := recoverState(db, &Config{MaxAccounts: 8, DedupWindow: DefaultDedupWindow})
		require.NoError(t, err)
		r.bal[1].Add(-1)
		r.bal[2].Add(1)
		_, err = writeSnapshot(db, &cfg, &snapshotData{txID: 100, refs: r.refs}, r.bal, func() uint64 { return 100 }, nil, nil)
		require.NoError(t, err)
	})
	rep, err := Verify(cfg.Dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Len(t, rep.Findings, 1)
	require.Equal(t, idKey(prefixSnapshot, 100), rep.Findings[0].Key)
	require.Equal(t, []SnapshotCheck{{TxID: 100, Valid: true}}, rep.Snapshots)
}

func TestVerifyTornTailIsNoFinding(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1}
	fillLedger(t, cfg, 50)
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		val, _ := encodeBatch(nil, []txRecord{{id: 51, kind: KindDeposit, n: 2, inline: [2]Entry{{0, -1, -1}, {1, 1, 1}}}}, walMaxBytes)
		require.NoError(t, db.Set(idKey(prefixWAL, 51), val[:len(val)-3], pebble.Sync))
	})
	rep, err := Verify(cfg.Dir)
	require.NoError(t, err)
	require.Equal(t, idKey(prefixWAL, 51), rep.TornTail)
	require.Equal(t, TxID(50), rep.LastTx)
}

func TestOfflineToolsRefuseNonLedger(t *testing.T) {
	_, err := Verify(t.TempDir() + "/missing")
	require.Error(t, err)
	// An empty directory (or one of something else) is no ledger, and the
	// tools leave it as it was: no LOCK file appears in it.
	empty := t.TempDir()
	_, err = Verify(empty)
	require.ErrorIs(t, err, ErrNoLedger)
	require.ErrorIs(t, Dump(empty, 0, 0, &bytes.Buffer{}), ErrNoLedger)
	left, err := os.ReadDir(empty)
	require.NoError(t, err)
	require.Empty(t, left)
	dir := t.TempDir()
	withDB(t, dir, func(db *pebble.DB) { require.NoError(t, db.Set([]byte("x"), nil, pebble.Sync)) })
	_, err = Verify(dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, Dump(dir, 0, 0, &bytes.Buffer{}), ErrCorrupt)
}

func TestDump(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALMaxBatch: 8}
	fillLedger(t, cfg, 100)
	var buf bytes.Buffer
	require.NoError(t, Dump(cfg.Dir, 10, 24, &buf))
	sc := bufio.NewScanner(&buf)
	want := TxID(10)
	for sc.Scan() {
		var tx DumpTx
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&tx))
		require.Equal(t, want, tx.ID)
		require.NotNil(t, tx.Entries)
		var sum int64
		for _, e := range tx.Entries {
			sum += e.Delta
		}
		require.Zero(t, sum)
		switch want % 5 {
		case 1: // i%5 == 0: a deposit with a ref
			require.Equal(t, "deposit", tx.Kind)
			require.Equal(t, "ok", tx.Fail)
			require.Equal(t, uint64(1000+want-1), tx.UserRef)
		case 0: // i%5 == 4: a withdrawal reusing the ref of tx want-4
			require.Equal(t, "duplicate", tx.Fail)
			require.Equal(t, want-4, tx.DupOf)
			require.Empty(t, tx.Entries)
		}
		want++
	}
	require.NoError(t, sc.Err())
	require.Equal(t, TxID(25), want)

	buf.Reset()
	require.NoError(t, Dump(cfg.Dir, 0, 0, &buf))
	require.Equal(t, 100, bytes.Count(buf.Bytes(), []byte("\n")))
}
