package ledger

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func openTest(t *testing.T, cfg Config) *Ledger {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.MaxAccounts == 0 {
		cfg.MaxAccounts = 1024
	}
	l, err := Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

func TestSmoke(t *testing.T) {
	l := openTest(t, Config{})
	ctx := context.Background()
	r, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 100}, Snapshot)
	require.NoError(t, err)
	require.Equal(t, TxID(1), r.ID)
	require.Equal(t, OK, r.Fail)
	require.Equal(t, []Entry{{0, -100, -100}, {1, 100, 100}}, r.Entries)
	r, err = l.SubmitAndWait(ctx, Transfer{From: 1, To: 2, Amount: 150}, Committed)
	require.NoError(t, err)
	require.Equal(t, InsufficientFunds, r.Fail)
	require.Empty(t, r.Entries)
	id, err := l.Submit(Transfer{From: 1, To: 2, Amount: 30})
	require.NoError(t, err)
	require.NoError(t, l.Wait(ctx, id, Snapshot))
	b, err := l.Balance(2)
	require.NoError(t, err)
	require.Equal(t, int64(30), b)
	got, err := l.Result(2)
	require.NoError(t, err)
	require.Equal(t, InsufficientFunds, got.Fail)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	_, err = l.Submit(Deposit{Account: 1, Amount: 1})
	require.ErrorIs(t, err, ErrClosed)
}
