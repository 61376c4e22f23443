package ledger

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
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
	require.Equal(t, AccountNotFound, r.Fail, "account 1 does not exist yet")
	createAccounts(t, l, 3)
	r, err = l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 100}, Snapshot)
	require.NoError(t, err)
	require.Equal(t, TxID(4), r.ID)
	require.Equal(t, OK, r.Fail)
	require.Equal(t, []Entry{{Account: 0, Column: DebitsPosted, Delta: 100, Value: 100}, {Account: 1, Column: CreditsPosted, Delta: 100, Value: 100}}, r.Entries)
	r, err = l.SubmitAndWait(ctx, Transfer{From: 1, To: 2, Amount: 150}, Committed)
	require.NoError(t, err)
	require.Equal(t, ExceedsCredits, r.Fail)
	require.Empty(t, r.Entries)
	id, err := l.Submit(Transfer{From: 1, To: 2, Amount: 30})
	require.NoError(t, err)
	require.NoError(t, l.Wait(ctx, id, Snapshot))
	b, err := l.Balance(2)
	require.NoError(t, err)
	require.Equal(t, int64(30), b)
	got, err := l.Result(5)
	require.NoError(t, err)
	require.Equal(t, ExceedsCredits, got.Fail)
	a, err := l.Lookup(1)
	require.NoError(t, err)
	require.Equal(t, Account{ID: 1, Ledger: 1, Flags: DebitsMustNotExceedCredits, DebitsPosted: 30, CreditsPosted: 100}, a)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	_, err = l.Submit(Deposit{Account: 1, Amount: 1})
	require.ErrorIs(t, err, ErrClosed)
}

// createAccounts creates accounts 1 .. n-1 in ledger 1 with
// DebitsMustNotExceedCredits (a debit never takes them below zero), in id
// order, so that account a has slot a; it waits until they are visible and
// returns the last tx id.
func createAccounts(t testing.TB, l *Ledger, n uint64) TxID {
	t.Helper()
	var last TxID
	batch := make([]Op, 0, 1024)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		_, lst, err := l.SubmitBatch(batch)
		require.NoError(t, err)
		last = lst
		batch = batch[:0]
	}
	for a := uint64(1); a < n; a++ {
		batch = append(batch, CreateAccount{ID: a, Ledger: 1, Flags: DebitsMustNotExceedCredits})
		if len(batch) == cap(batch) || len(batch) == l.seq.Cap() {
			flush()
		}
	}
	flush()
	if last != 0 {
		require.NoError(t, l.Wait(context.Background(), last, Snapshot))
	}
	return last
}

// noAccount is what balances reports for an id that is not an account.
const noAccount = math.MinInt64

// balances returns the posted balance of accounts 0 .. MaxAccounts-1, or
// noAccount for an id never created.
func balances(t testing.TB, l *Ledger) []int64 {
	t.Helper()
	bal := make([]int64, l.cfg.MaxAccounts)
	for a := range bal {
		b, err := l.Balance(uint64(a))
		if errors.Is(err, ErrAccountNotFound) {
			b = noAccount
		} else {
			require.NoError(t, err)
		}
		bal[a] = b
	}
	return bal
}

// TestBatchResults: SubmitBatchAndWait answers one Result per op, in op
// order, with each op's id and its own fail reason, at every level; a
// refused batch takes no id and calls nothing.
func TestBatchResults(t *testing.T) {
	l := openTest(t, Config{MaxAccounts: 8})
	ctx := context.Background()
	for _, level := range []Level{Computed, Committed, Snapshot} {
		x, err := l.Indexes()
		require.NoError(t, err)
		base := x.Sequenced
		ref := uint64(level) * 100
		ops := []Op{
			CreateAccount{ID: 1, Ledger: 1, Flags: DebitsMustNotExceedCredits}, // exists after the first round
			CreateAccount{ID: 2, Ledger: 2},
			Deposit{Account: 1, Amount: 10, UserRef: ref},
			Deposit{Account: 1, Amount: 10, UserRef: ref},
			Transfer{From: 1, To: 2, Amount: 5},
			Withdrawal{Account: 1, Amount: 1 << 40},
			Deposit{Account: 9, Amount: 1},
		}
		res, err := l.SubmitBatchAndWait(ctx, ops, level)
		require.NoError(t, err)
		require.Len(t, res, len(ops))
		create := OK
		if level != Computed {
			create = Exists
		}
		want := []FailReason{create, create, OK, Duplicate, AccountsMustHaveSameLedger, ExceedsCredits, AccountNotFound}
		for i, r := range res {
			assert.Equal(t, base+TxID(i)+1, r.ID, "op %d", i)
			assert.Equal(t, want[i], r.Fail, "op %d at %v", i, level)
		}
		assert.Equal(t, base+3, res[3].DupOf)
		st, err := l.Status(res[len(res)-1].ID)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, st, level)
	}
	_, err := l.SubmitBatchAndWait(ctx, []Op{Deposit{Account: 1, Amount: 1}, Deposit{Account: 1}}, Committed)
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, 1, ie.Index)
	_, _, err = l.SubmitBatchFunc([]Op{Deposit{Account: 1, Amount: 1}}, Sequenced, func(Result, error) {})
	require.ErrorIs(t, err, ErrLevel)
	_, _, err = l.SubmitBatchFunc([]Op{Deposit{Account: 1, Amount: 1}}, Committed, nil)
	require.ErrorIs(t, err, ErrNilFunc)
	require.Zero(t, l.fns.head, "no waiter left behind")
}

// TestChainsAcrossRingWrap: with rings of 8, chains of 5 often find less
// contiguous room in the WAL ring than they need and go through the
// Transactor's scratch path; every chain still applies whole or not at
// all, and the results arrive in order.
func TestChainsAcrossRingWrap(t *testing.T) {
	l := openTest(t, Config{MaxAccounts: 8, RingSize: 8})
	createAccounts(t, l, 4)
	ctx := context.Background()
	for round := range 200 {
		amt := uint64(1 + round%3)
		ops := []Op{
			Deposit{Account: 1, Amount: amt, Linked: true},
			Deposit{Account: 2, Amount: amt, Linked: true},
			Transfer{From: 1, To: 3, Amount: amt, Linked: true},
			Transfer{From: 2, To: 3, Amount: amt, Linked: true},
			Withdrawal{Account: 3, Amount: 2*amt + uint64(round%2)}, // fails on odd rounds: one more than 3 holds
		}
		res, err := l.SubmitBatchAndWait(ctx, ops, Snapshot)
		require.NoError(t, err)
		for i, r := range res {
			want := OK
			if round%2 == 1 {
				want = LinkedEventFailed
				if i == 4 {
					want = ExceedsCredits
				}
			}
			require.Equal(t, want, r.Fail, "round %d op %d", round, i)
			if i > 0 {
				require.Equal(t, res[i-1].ID+1, r.ID)
			}
		}
		for a := uint64(1); a <= 3; a++ {
			acct, err := l.Lookup(a)
			require.NoError(t, err)
			require.Equal(t, acct.CreditsPosted, acct.DebitsPosted, "account %d after round %d: every applied chain nets it to zero", a, round)
		}
	}
}
