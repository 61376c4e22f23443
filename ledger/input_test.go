package ledger

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBadInputRefused(t *testing.T) {
	l := openTest(t, Config{MaxAccounts: 10})
	ctx := context.Background()
	createAccounts(t, l, 10)
	_, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 50}, Snapshot)
	require.NoError(t, err)
	tooMany := make([]Leg, MaxLegs+1)
	for i := range tooMany {
		tooMany[i] = Leg{Account: 1, Delta: 1}
	}
	cases := []struct {
		op   Op
		want error
	}{
		{nil, ErrNilOp},
		{(*Deposit)(nil), ErrNilOp},
		{Deposit{Account: 1}, ErrZeroAmount},
		{Withdrawal{Account: 1}, ErrZeroAmount},
		{Transfer{From: 1, To: 2}, ErrZeroAmount},
		{Deposit{Account: 1, Amount: math.MaxInt64 + 1}, ErrAmountRange},
		{Transfer{From: 3, To: 3, Amount: 1}, ErrSameAccount},
		{CreateAccount{ID: 0, Ledger: 1}, ErrAccountID},
		{CreateAccount{ID: 20, Ledger: 0}, ErrLedgerZero},
		{&CreateAccount{ID: 20, Ledger: 1, Flags: 1 << 9}, ErrAccountFlags},
		{CreateAccount{ID: 20, Ledger: 1, Flags: DebitsMustNotExceedCredits | CreditsMustNotExceedDebits}, ErrAccountFlags},
		{(*CreateAccount)(nil), ErrNilOp},
		{Deposit{Account: SystemAccount, Amount: 1}, ErrSameAccount},
		{Composite{}, ErrNoLegs},
		{Composite{Legs: tooMany}, ErrTooManyLegs},
		{Composite{Legs: []Leg{{1, 1}, {2, -1}}, Flags: 0x80}, ErrFlags},
		{Composite{Legs: []Leg{{1, 0}, {2, 0}}}, ErrZeroAmount},
	}
	before := captureState(t, l)
	for _, c := range cases {
		_, err := l.Submit(c.op)
		require.ErrorIs(t, err, c.want, "%#v", c.op)
		var ie *InputError
		require.ErrorAs(t, err, &ie)
		_, err = l.SubmitAndWait(ctx, c.op, Committed)
		require.ErrorIs(t, err, c.want, "%#v", c.op)
		_, _, err = l.SubmitBatch([]Op{Deposit{Account: 1, Amount: 1}, c.op})
		require.ErrorAs(t, err, &ie)
		require.Equal(t, 1, ie.Index)
		require.ErrorIs(t, err, c.want)
	}
	_, _, err = l.SubmitBatch(nil)
	require.ErrorIs(t, err, ErrBatchSize)
	_, err = l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 1}, Sequenced)
	require.ErrorIs(t, err, ErrLevel)
	require.ErrorIs(t, l.Wait(ctx, 1, Unknown), ErrLevel)
	_, err = l.Balance(10)
	require.ErrorIs(t, err, ErrAccountNotFound)
	require.ErrorContains(t, err, "account 10: ", "the error names the account")
	require.Equal(t, before, captureState(t, l), "refused input changed the ledger")
	r, err := l.SubmitAndWait(ctx, Transfer{From: 1, To: 12, Amount: 1}, Snapshot)
	require.NoError(t, err, "an uncreated account is no input error: the Transactor fails the op")
	require.Equal(t, AccountNotFound, r.Fail)
	before = captureState(t, l)
	_, err = l.Submit(CreateAccount{ID: 5})
	require.ErrorContains(t, err, "op 0: ledger: ledger must not be zero")
	require.Equal(t, before, captureState(t, l), "refused input changed the ledger")
	// The next valid op takes the next id.
	id, err := l.Submit(Deposit{Account: 1, Amount: 1})
	require.NoError(t, err)
	require.Equal(t, before.x.Sequenced+1, id)
}

func TestFailedTransactionsChangeNothing(t *testing.T) {
	l := openTest(t, Config{MaxAccounts: 10, MaxEntries: 4})
	ctx := context.Background()
	createAccounts(t, l, 6)
	_, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 100, UserRef: 7}, Snapshot)
	require.NoError(t, err)
	for _, c := range []struct {
		op   Op
		want FailReason
	}{
		{Withdrawal{Account: 1, Amount: 101}, ExceedsCredits},
		{Transfer{From: 2, To: 1, Amount: 1}, ExceedsCredits},
		{Deposit{Account: 1, Amount: math.MaxInt64}, OverflowsDebitsPosted},
		{Deposit{Account: 7, Amount: 1}, AccountNotFound},
		{Transfer{From: 1, To: 9, Amount: 1}, AccountNotFound},
		{Composite{Legs: []Leg{{1, -1}, {8, 1}}}, AccountNotFound},
		{Composite{Legs: []Leg{{1, -10}, {2, 11}}}, ZeroSumViolation},
		{Composite{Legs: []Leg{{1, math.MaxInt64}, {1, math.MaxInt64}, {2, math.MinInt64}, {2, math.MinInt64}, {0, 2}}}, EntryLimitExceeded},
		{Composite{Legs: []Leg{{1, math.MaxInt64}, {2, math.MinInt64 + 1}}}, OverflowsCreditsPosted},
		{CreateAccount{ID: 1, Ledger: 1, Flags: DebitsMustNotExceedCredits}, Exists},
		{CreateAccount{ID: 1, Ledger: 1}, ExistsWithDifferentFlags},
		{CreateAccount{ID: 1, Ledger: 1, Flags: DebitsMustNotExceedCredits, UserData: [2]uint64{0, 1}}, ExistsWithDifferentUserData},
		{CreateAccount{ID: 1, Ledger: 2, Flags: DebitsMustNotExceedCredits}, ExistsWithDifferentLedger},
		{CreateAccount{ID: 1, Ledger: 1, Code: 3, Flags: DebitsMustNotExceedCredits}, ExistsWithDifferentCode},
		{Composite{Legs: []Leg{{2, 5}, {1, -200}, {0, 195}}, Flags: NoNegative}, ExceedsCredits},
		{Deposit{Account: 3, Amount: 1, UserRef: 7}, Duplicate},
	} {
		r, err := l.SubmitAndWait(ctx, c.op, Snapshot)
		require.NoError(t, err)
		require.Equal(t, c.want, r.Fail, "%#v", c.op)
		require.Empty(t, r.Entries)
		for a, want := range []int64{-100, 100, 0, 0} {
			b, _ := l.Balance(uint64(a))
			require.Equal(t, want, b, "account %d after %#v", a, c.op)
		}
	}
	// A composite whose running sum overflows but which nets to zero is
	// fine, and without NoNegative may leave an account without limits
	// negative.
	_, err = l.SubmitAndWait(ctx, CreateAccount{ID: 6, Ledger: 1}, Snapshot)
	require.NoError(t, err)
	r, err := l.SubmitAndWait(ctx, Composite{Legs: []Leg{{2, math.MaxInt64}, {3, 1}, {6, math.MinInt64 + 1}, {0, -1}}}, Snapshot)
	require.NoError(t, err)
	require.Equal(t, OK, r.Fail)
	b, _ := l.Balance(6)
	require.Equal(t, int64(-math.MaxInt64), b)
	// The limit flag: account 3, with DebitsMustNotExceedCredits, cannot.
	r, err = l.SubmitAndWait(ctx, Composite{Legs: []Leg{{3, -2}, {2, 2}}}, Snapshot)
	require.NoError(t, err)
	require.Equal(t, ExceedsCredits, r.Fail)
	// The tenth account does not fit MaxAccounts 10 (the system account is one).
	for id := uint64(7); id <= 9; id++ {
		r, err = l.SubmitAndWait(ctx, CreateAccount{ID: id * 1000, Ledger: 1}, Snapshot)
		require.NoError(t, err)
		require.Equal(t, OK, r.Fail)
	}
	r, err = l.SubmitAndWait(ctx, CreateAccount{ID: 1 << 60, Ledger: 1}, Snapshot)
	require.NoError(t, err)
	require.Equal(t, AccountsLimitReached, r.Fail)
}

func TestCallsAfterClose(t *testing.T) {
	l := openTest(t, Config{})
	ctx := context.Background()
	_, err := l.Submit(Deposit{Account: 1, Amount: 1})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	_, err = l.Submit(Deposit{Account: 1, Amount: 1})
	require.ErrorIs(t, err, ErrClosed)
	_, _, err = l.SubmitBatch([]Op{Deposit{Account: 1, Amount: 1}})
	require.ErrorIs(t, err, ErrClosed)
	_, err = l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 1}, Computed)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, l.Wait(ctx, 1, Computed), ErrClosed)
	_, err = l.Status(1)
	require.ErrorIs(t, err, ErrClosed)
	_, err = l.Result(1)
	require.ErrorIs(t, err, ErrClosed)
	_, err = l.Balance(1)
	require.ErrorIs(t, err, ErrClosed)
	_, err = l.Indexes()
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, l.Close())
}

func TestSubmitAndWaitContext(t *testing.T) {
	l := openTest(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 1}, Committed)
	require.ErrorIs(t, err, context.Canceled)
	x, _ := l.Indexes()
	require.Zero(t, x.Sequenced, "a cancelled context must not submit")
}

func TestBatchLargerThanRingRefused(t *testing.T) {
	l := openTest(t, Config{RingSize: 8})
	ops := make([]Op, 9)
	for i := range ops {
		ops[i] = Deposit{Account: 1, Amount: 1}
	}
	_, _, err := l.SubmitBatch(ops)
	require.ErrorIs(t, err, ErrBatchSize)
	first, last, err := l.SubmitBatch(ops[:8])
	require.NoError(t, err)
	require.Equal(t, TxID(1), first)
	require.Equal(t, TxID(8), last)
}
