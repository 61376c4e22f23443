package ledger

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

// A format 2 directory (the WAL as "W" keys inside pebble, as every build
// before format 3 wrote it) opens and is migrated: the same state and
// results, the batches in wal/ segments, no W key left, meta version 3; a
// second Open is an ordinary one. Offline tools refuse it until then.
func TestFormat2Migrated(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 300, WALRetention: -1, WALMaxBatch: 16, WALSegmentSize: 256 << 10}
	fillLedger(t, cfg, 1000)
	l, err := Open(cfg)
	require.NoError(t, err)
	want := captureState(t, l)
	require.NoError(t, l.Close())
	batches := walBatches(t, cfg.Dir)
	downgrade(t, cfg.Dir, formatVersionV2)
	_, err = os.Stat(filepath.Join(cfg.Dir, walDir))
	require.ErrorIs(t, err, os.ErrNotExist)

	_, err = verifyDir(nil, cfg.Dir)
	require.ErrorIs(t, err, ErrIncompatible)

	l, err = Open(cfg)
	require.NoError(t, err)
	require.Equal(t, want, captureState(t, l))
	r, err := l.SubmitAndWait(context.Background(), Deposit{Account: 1, Amount: 1, UserRef: 1000}, Committed)
	require.NoError(t, err)
	require.Equal(t, TxID(1001), r.ID)
	require.NoError(t, l.Close())

	withDB(t, cfg.Dir, func(db *pebble.DB) {
		m, err := readMeta(db)
		require.NoError(t, err)
		require.Equal(t, formatVersion, m.FormatVersion)
		it, err := prefixIter(db, prefixWAL)
		require.NoError(t, err)
		require.False(t, it.First(), "W keys left")
		require.NoError(t, it.Close())
	})
	got := walBatches(t, cfg.Dir)
	require.GreaterOrEqual(t, len(got), len(batches))
	for i, b := range batches {
		require.Equal(t, b.batch, got[i].batch, "batch %d copied as it was", i)
	}
	rep, err := verifyDir(nil, cfg.Dir)
	require.NoError(t, err)
	require.Equal(t, TxID(1001), rep.LastTx)
}

// A migration cut short (segments written, meta still format 2) is redone
// from the W keys by the next Open.
func TestFormat2MigrationRedone(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALMaxBatch: 16, WALSegmentSize: 256 << 10}
	fillLedger(t, cfg, 200)
	downgrade(t, cfg.Dir, formatVersionV2)
	// A partial copy: the first batches only, as a crash would leave.
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		c, err := cfg.withDefaults()
		require.NoError(t, err)
		require.NoError(t, migrateCopyOnly(db, &c, 3))
	})
	l, err := Open(cfg)
	require.NoError(t, err)
	x, _ := l.Indexes()
	require.Equal(t, TxID(200), x.Committed)
	require.NoError(t, l.Close())
	_, err = verifyDir(nil, cfg.Dir)
	require.NoError(t, err)
}
