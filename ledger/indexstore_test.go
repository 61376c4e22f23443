package ledger

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// histRounds submits rounds batches of the history workload and returns
// every result, the accounts' creations first.
func histRounds(t *testing.T, l *Ledger, rng *rand.Rand, rounds, n int) ([]uint64, []Result) {
	t.Helper()
	accts, all := histAccounts(t, l, 16)
	ref := uint64(0)
	return accts, append(all, histMore(t, l, rng, accts, &ref, rounds, n)...)
}

// histMore submits rounds batches of n operations of histWorkload over
// accts, each waited until Committed, and returns their results.
func histMore(t *testing.T, l *Ledger, rng *rand.Rand, accts []uint64, ref *uint64, rounds, n int) []Result {
	t.Helper()
	var all []Result
	for range rounds {
		r, err := l.SubmitBatchAndWait(context.Background(), histWorkload(rng, n, accts, ref), Committed)
		require.NoError(t, err)
		all = append(all, r...)
	}
	return all
}

// indexedLedger opens a ledger with the index in a new directory and
// runs histRounds' 8 rounds of 50 on it, its random source seeded with
// (21, seq).
func indexedLedger(t *testing.T, seq uint64) (Config, *Ledger, *rand.Rand, []Result) {
	t.Helper()
	rng := rand.New(rand.NewPCG(21, seq))
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 64, SnapshotEvery: 200, Index: true}
	l, err := Open(cfg)
	require.NoError(t, err)
	_, all := histRounds(t, l, rng, 8, 50)
	return cfg, l, rng, all
}

// TestIndexLegacyLayout: a directory written before the index had its own
// store holds the index's keys in the ledger's store. An Open with the
// index drops them from there and builds the index in its store from the
// WAL; the reads answer as before.
func TestIndexLegacyLayout(t *testing.T) {
	cfg, l, rng, all := indexedLedger(t, 13)
	require.NoError(t, l.Close())

	// The same keys where the earlier build kept them.
	legacy := indexKeys(t, cfg.Dir)
	require.NotEmpty(t, legacy)
	require.NoError(t, os.RemoveAll(filepath.Join(cfg.Dir, indexDir)))
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		for k, v := range legacy {
			require.NoError(t, db.Set([]byte(k), []byte(v), pebble.Sync))
		}
	})

	l, err := Open(cfg)
	require.NoError(t, err)
	st := l.IndexStats()
	require.False(t, st.Restarted)
	require.EqualValues(t, len(all), st.CaughtUp, "not rebuilt from the first transaction")
	checkIndex(t, l, newHistModel(all), rng)
	require.NoError(t, l.Close())
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		for _, p := range append(indexPrefixes[:], prefixIndexState) {
			it, err := prefixIter(db, p)
			require.NoError(t, err)
			require.False(t, it.First(), "ledger store still holds index key %q", it.Key())
			require.NoError(t, it.Close())
		}
	})
	withIndexDB(t, cfg.Dir, func(db *pebble.DB) {
		_, last, ok, err := readIndexState(db)
		require.NoError(t, err)
		require.True(t, ok, "no mark in the index store")
		require.EqualValues(t, len(all), last)
	})
}

// TestIndexBlocksBefore: an index store written by a build that kept its
// blocks under "T" (their postings and time keys name blocks this build
// does not read) is rebuilt from the WAL at Open: every read is right, no
// "T" key is left, and the mark is the last transaction.
func TestIndexBlocksBefore(t *testing.T) {
	cfg, l, rng, all := indexedLedger(t, 19)
	require.NoError(t, l.Close())

	// The same index with its blocks where the build before kept them.
	moved := 0
	withIndexDB(t, cfg.Dir, func(db *pebble.DB) {
		it, err := prefixIter(db, prefixBlock)
		require.NoError(t, err)
		b := db.NewBatch()
		for ok := it.First(); ok; ok = it.Next() {
			k := append([]byte{prefixBlockBefore}, it.Key()[1:]...)
			require.NoError(t, b.Set(k, it.Value(), nil))
			require.NoError(t, b.Delete(it.Key(), nil))
			moved++
		}
		require.NoError(t, it.Error())
		require.NoError(t, it.Close())
		require.NoError(t, b.Commit(pebble.NoSync)) // withIndexDB flushes
	})
	require.Positive(t, moved)
	floor, err := followerWALFloor(&Config{Dir: cfg.Dir, FS: vfs.Default})
	require.NoError(t, err)
	require.EqualValues(t, 1, floor, "a follower must keep the WAL the rebuild reads")

	l, err = Open(cfg)
	require.NoError(t, err)
	require.EqualValues(t, len(all), l.IndexStats().CaughtUp, "not rebuilt from the first transaction")
	checkIndex(t, l, newHistModel(all), rng)
	require.NoError(t, l.Close())
	withIndexDB(t, cfg.Dir, func(db *pebble.DB) {
		before, err := blocksBefore(db)
		require.NoError(t, err)
		require.False(t, before, "blocks under the prefix before are left")
		_, last, ok, err := readIndexState(db)
		require.NoError(t, err)
		require.True(t, ok)
		require.EqualValues(t, len(all), last)
	})
}

// TestIndexStoreOutlivesRetention: the index's store has no log, so a
// power cut loses what it had not flushed. Retention must not remove the
// WAL that the catch-up then needs: after a cut with every unsynced byte
// lost, the index catches up rather than restarts.
func TestIndexStoreOutlivesRetention(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 17))
	mem := vfs.NewCrashableMem()
	cfg := Config{Dir: "/r", FS: mem, MaxAccounts: 64, SnapshotEvery: 300, WALRetention: 300,
		WALSegmentSize: 256 << 10, WALMaxBatch: 64, Index: true}
	l, err := Open(cfg)
	require.NoError(t, err)
	_, all := histRounds(t, l, rng, 60, 200)
	ctx := context.Background()
	require.NoError(t, l.Wait(ctx, TxID(len(all)), Snapshot))
	_, err = l.Snapshot(ctx) // a persisted snapshot at the end: retention runs
	require.NoError(t, err)
	segs, _, err := listSegments(mem, cfg.Dir)
	require.NoError(t, err)
	require.Greater(t, segs[0].First, uint64(1), "retention removed no segment: the test shows nothing")
	crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	require.NoError(t, l.Close())

	cfg.FS = crashed
	l, err = Open(cfg)
	require.NoError(t, err)
	x, err := l.Indexes()
	require.NoError(t, err)
	require.EqualValues(t, len(all), x.Committed)
	st := l.IndexStats()
	require.False(t, st.Restarted, "the index restarted: retention removed the WAL its catch-up needed")
	require.Less(t, st.CaughtUp, uint64(len(all)), "the index's flushed part was lost")
	checkIndex(t, l, newHistModel(all), rng)
	require.NoError(t, l.Close())
}

// TestCheckpointCarriesIndex: a checkpoint of a ledger that keeps the index
// carries its store's keys, every block as a copy (the receiver has other
// WAL segments); the installed directory, opened with the index, reads
// nothing of the sender's and catches up only what the checkpoint's index
// lacked.
func TestCheckpointCarriesIndex(t *testing.T) {
	ctx := context.Background()
	cfg, l, rng, all := indexedLedger(t, 19)
	require.NoError(t, l.waitIndexed(ctx, TxID(len(all))))
	var ck bytes.Buffer
	at, err := l.WriteCheckpoint(ctx, &ck)
	require.NoError(t, err)
	require.EqualValues(t, len(all), at)
	require.NoError(t, l.Close())

	ncfg := cfg
	ncfg.Dir = filepath.Join(t.TempDir(), "new")
	_, err = InstallCheckpoint(ncfg, &ck)
	require.NoError(t, err)
	require.DirExists(t, filepath.Join(ncfg.Dir, indexDir))
	blocks := indexBlocks(t, ncfg.Dir)
	require.NotEmpty(t, blocks)
	for _, b := range blocks {
		require.False(t, b.isRef, "block of tx %d carried as a reference", b.first)
	}
	require.NoError(t, os.RemoveAll(cfg.Dir))
	n, err := Open(ncfg)
	require.NoError(t, err)
	st := n.IndexStats()
	require.False(t, st.Restarted)
	require.Zero(t, st.CaughtUp, "the installed index was not the sender's")
	checkIndex(t, n, newHistModel(all), rng)
	require.NoError(t, n.Close())
}
