package ledger

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// indexKeys returns every record of the history and query indexes in dir
// (key -> value), the index state included: those of its own store, and
// any under the index's prefixes in the ledger's store.
func indexKeys(t *testing.T, dir string) map[string]string {
	t.Helper()
	keys := map[string]string{}
	read := func(db *pebble.DB) {
		for _, p := range append(indexPrefixes[:], prefixIndexState) {
			it, err := prefixIter(db, p)
			require.NoError(t, err)
			for ok := it.First(); ok; ok = it.Next() {
				keys[string(it.Key())] = string(it.Value())
			}
			require.NoError(t, it.Error())
			require.NoError(t, it.Close())
		}
	}
	withDB(t, dir, read)
	if _, err := os.Stat(filepath.Join(dir, indexDir)); err == nil {
		withIndexDB(t, dir, read)
	}
	return keys
}

// withIndexDB runs f on the index store of the ledger directory dir,
// flushed before it is closed (it has no log).
func withIndexDB(t *testing.T, dir string, f func(db *pebble.DB)) {
	t.Helper()
	db, err := pebble.Open(filepath.Join(dir, indexDir), indexStoreOptions(&Config{FS: vfs.Default}))
	require.NoError(t, err)
	f(db)
	require.NoError(t, db.Flush())
	require.NoError(t, db.Close())
}

// setIndexValue rewrites the value of key in the index store of dir.
func setIndexValue(t *testing.T, dir string, key []byte, mutate func([]byte) []byte) {
	t.Helper()
	withIndexDB(t, dir, func(db *pebble.DB) { rewriteValue(t, db, key, mutate, pebble.NoSync) })
}

// TestIndexOffByDefault: a ledger opened with the zero Config (but Dir)
// keeps no index. Every read of it fails with ErrIndexOff, IndexStats says
// it is off, and after transfers, History accounts, snapshots and a
// restart nothing is stored under the index's prefixes.
func TestIndexOffByDefault(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 12))
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 64, SnapshotEvery: 100}
	l, err := Open(cfg)
	require.NoError(t, err)
	accts, _ := histAccounts(t, l, 16) // every other one with History
	ref := uint64(0)
	var last TxID
	for range 6 {
		r, err := l.SubmitBatchAndWait(ctx, histWorkload(rng, 60, accts, &ref), Committed)
		require.NoError(t, err)
		last = r[len(r)-1].ID
	}
	require.NoError(t, l.Wait(ctx, last, Snapshot))
	require.Equal(t, IndexStats{}, l.IndexStats())
	reads := map[string]func() error{
		"AccountTransfers": func() error {
			_, err := l.AccountTransfers(ctx, accts[0], AccountFilter{Debits: true, Credits: true, Limit: 10})
			return err
		},
		"AccountBalances": func() error {
			_, err := l.AccountBalances(ctx, accts[0], AccountFilter{Debits: true, Credits: true, Limit: 10})
			return err
		},
		"BalanceAt": func() error {
			_, _, err := l.BalanceAt(ctx, accts[0], last)
			return err
		},
		"QueryTransfers": func() error {
			_, err := l.QueryTransfers(ctx, TransferFilter{Limit: 10})
			return err
		},
		"QueryAccounts": func() error {
			_, err := l.QueryAccounts(ctx, AccountQuery{Ledger: 1, Limit: 10})
			return err
		},
		"LookupTransfers": func() error {
			_, _, err := l.LookupTransfers(ctx, []TxID{1, last}, 0)
			return err
		},
	}
	for name, read := range reads {
		require.ErrorIs(t, read(), ErrIndexOff, name)
	}
	require.NoError(t, l.Close())
	l, err = Open(cfg)
	require.NoError(t, err)
	require.False(t, l.IndexStats().On)
	require.NoError(t, l.Close())
	require.Empty(t, indexKeys(t, cfg.Dir))
	require.NoDirExists(t, filepath.Join(cfg.Dir, indexDir), "the index's store was created")
}
