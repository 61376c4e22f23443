package ledger

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

// indexKeys returns every record of the history and query indexes in dir
// (key -> value), the index state included.
func indexKeys(t *testing.T, dir string) map[string]string {
	t.Helper()
	keys := map[string]string{}
	withDB(t, dir, func(db *pebble.DB) {
		for _, p := range append(indexPrefixes[:], prefixIndexState) {
			it, err := prefixIter(db, p)
			require.NoError(t, err)
			for ok := it.First(); ok; ok = it.Next() {
				keys[string(it.Key())] = string(it.Value())
			}
			require.NoError(t, it.Error())
			require.NoError(t, it.Close())
		}
	})
	return keys
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
}
