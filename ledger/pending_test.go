package ledger

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

// submitAll submits ops as one batch and waits for Committed.
func submitAll(t *testing.T, l *Ledger, ops ...Op) []Result {
	t.Helper()
	res, err := l.SubmitBatchAndWait(context.Background(), ops, Committed)
	require.NoError(t, err)
	return res
}

func fails(res []Result) []FailReason {
	out := make([]FailReason, len(res))
	for i, r := range res {
		out[i] = r.Fail
	}
	return out
}

func lookup(t *testing.T, l *Ledger, id uint64) Account {
	t.Helper()
	require.NoError(t, l.Wait(context.Background(), TxID(l.computed.Load()), Snapshot))
	a, err := l.Lookup(id)
	require.NoError(t, err)
	return a
}

// TestPendingPostVoid: a card authorisation: a hold, a partial post (the
// rest released), a second post refused; a hold voided; limits count the
// held amounts; everything survives a reopen.
func TestPendingPostVoid(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 16, SnapshotEvery: -1}
	l, err := Open(cfg)
	require.NoError(t, err)
	res := submitAll(t, l,
		CreateAccount{ID: 1, Ledger: 840, Flags: DebitsMustNotExceedCredits}, // the card holder
		CreateAccount{ID: 2, Ledger: 840},                                    // the merchant
		Deposit{Account: 1, Amount: 100},
		Transfer{From: 1, To: 2, Amount: 60, Flags: Pending, Code: 7, UserData: 99},
		Transfer{From: 1, To: 2, Amount: 50, Flags: Pending}, // 60 + 50 > 100
		Transfer{From: 1, To: 2, Amount: 40},                 // 60 held + 40 = 100: ok
	)
	require.Equal(t, []FailReason{OK, OK, OK, OK, ExceedsCredits, OK}, fails(res))
	hold := res[3].ID
	a := lookup(t, l, 1)
	require.Equal(t, Account{ID: 1, Ledger: 840, Flags: DebitsMustNotExceedCredits, DebitsPosted: 40, CreditsPosted: 100, DebitsPending: 60}, a)
	res = submitAll(t, l,
		Transfer{Flags: PostPendingTransfer, PendingID: hold, Amount: 70}, // above the hold
		Transfer{Flags: PostPendingTransfer, PendingID: hold, From: 2},    // another debit account
		Transfer{Flags: PostPendingTransfer, PendingID: hold, Code: 8},
		Transfer{Flags: VoidPendingTransfer, PendingID: hold, Amount: 59},
		Transfer{Flags: PostPendingTransfer, PendingID: hold, Amount: 45},
		Transfer{Flags: PostPendingTransfer, PendingID: hold},
		Transfer{Flags: VoidPendingTransfer, PendingID: hold},
		Transfer{Flags: VoidPendingTransfer, PendingID: 999},
	)
	require.Equal(t, []FailReason{ExceedsPendingTransferAmount, PendingTransferHasDifferentDebitAccountID, PendingTransferHasDifferentCode,
		PendingTransferHasDifferentAmount, OK, PendingTransferAlreadyPosted, PendingTransferAlreadyPosted, PendingTransferNotFound}, fails(res))
	post := res[4]
	require.Equal(t, uint32(840), post.Ledger)
	require.Equal(t, uint16(7), post.Code)
	require.Equal(t, uint64(99), post.UserData)
	require.Equal(t, hold, post.PendingID)
	require.Len(t, post.Entries, 4)
	require.Equal(t, Account{ID: 1, Ledger: 840, Flags: DebitsMustNotExceedCredits, DebitsPosted: 85, CreditsPosted: 100}, lookup(t, l, 1))
	require.Equal(t, Account{ID: 2, Ledger: 840, CreditsPosted: 85}, lookup(t, l, 2))

	res = submitAll(t, l, Transfer{From: 1, To: 2, Amount: 15, Flags: Pending})
	require.Equal(t, OK, res[0].Fail)
	res = submitAll(t, l, Transfer{Flags: VoidPendingTransfer, PendingID: res[0].ID}, Transfer{Flags: PostPendingTransfer, PendingID: res[0].ID})
	require.Equal(t, []FailReason{OK, PendingTransferAlreadyVoided}, fails(res))
	require.Equal(t, Account{ID: 1, Ledger: 840, Flags: DebitsMustNotExceedCredits, DebitsPosted: 85, CreditsPosted: 100}, lookup(t, l, 1))
	require.NoError(t, l.Close())

	l, err = Open(cfg)
	require.NoError(t, err)
	res = submitAll(t, l, Transfer{Flags: PostPendingTransfer, PendingID: hold})
	require.Equal(t, PendingTransferAlreadyPosted, res[0].Fail)
	require.Equal(t, Account{ID: 1, Ledger: 840, Flags: DebitsMustNotExceedCredits, DebitsPosted: 85, CreditsPosted: 100}, lookup(t, l, 1))
	require.NoError(t, l.Close())
	_, err = verifyDir(nil, cfg.Dir)
	require.NoError(t, err)
}

// TestPendingExpiresWhileDown: a pending transfer whose timeout passes
// while the ledger is closed keeps its hold until the first transaction
// after Open, which releases it (its Result names it); a post of it then
// fails with PendingTransferExpired, and a reopen (replay, and a snapshot)
// reproduces exactly that.
func TestPendingExpiresWhileDown(t *testing.T) {
	for _, snap := range []bool{false, true} {
		clock := time.Unix(1_000_000, 0)
		cfg := Config{Dir: t.TempDir(), MaxAccounts: 16, SnapshotEvery: -1, now: func() int64 { return clock.UnixNano() }}
		l, err := Open(cfg)
		require.NoError(t, err)
		res := submitAll(t, l, CreateAccount{ID: 1, Ledger: 1}, CreateAccount{ID: 2, Ledger: 1}, Deposit{Account: 1, Amount: 10},
			Transfer{From: 1, To: 2, Amount: 4, Flags: Pending, Timeout: 60},
			Transfer{From: 1, To: 2, Amount: 3, Flags: Pending, Timeout: 3600})
		require.Equal(t, []FailReason{OK, OK, OK, OK, OK}, fails(res))
		short, long := res[3].ID, res[4].ID
		if snap {
			_, err = l.Snapshot(context.Background())
			require.NoError(t, err)
		}
		require.NoError(t, l.Close())

		clock = clock.Add(2 * time.Minute)
		l, err = Open(cfg)
		require.NoError(t, err)
		require.Equal(t, uint64(7), lookup(t, l, 1).DebitsPending) // still held: nothing ran
		res = submitAll(t, l, Transfer{Flags: PostPendingTransfer, PendingID: short}, Transfer{Flags: PostPendingTransfer, PendingID: long, Amount: 1})
		require.Equal(t, []FailReason{PendingTransferExpired, OK}, fails(res))
		require.Equal(t, []TxID{short}, res[0].Expired)
		require.Equal(t, Account{ID: 1, Ledger: 1, DebitsPosted: 1, CreditsPosted: 10}, lookup(t, l, 1))
		require.NoError(t, l.Close())

		l, err = Open(cfg)
		require.NoError(t, err)
		got, err := l.Result(res[0].ID)
		require.NoError(t, err)
		require.Equal(t, res[0], got)
		require.Equal(t, Account{ID: 1, Ledger: 1, DebitsPosted: 1, CreditsPosted: 10}, lookup(t, l, 1))
		res = submitAll(t, l, Transfer{Flags: VoidPendingTransfer, PendingID: short})
		require.Equal(t, PendingTransferExpired, res[0].Fail)
		require.NoError(t, l.Close())
		_, err = verifyDir(nil, cfg.Dir)
		require.NoError(t, err)
	}
}

// TestBalancingAndClosing: balancing transfers move what the limit allows;
// a closing transfer closes its account while pending and for good once
// posted; its void opens it again; a chain that fails undoes a closing and
// a post it made.
func TestBalancingAndClosing(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 16, SnapshotEvery: -1}
	l, err := Open(cfg)
	require.NoError(t, err)
	res := submitAll(t, l,
		CreateAccount{ID: 1, Ledger: 1, Flags: DebitsMustNotExceedCredits},
		CreateAccount{ID: 2, Ledger: 1, Flags: CreditsMustNotExceedDebits},
		CreateAccount{ID: 3, Ledger: 1},
		Deposit{Account: 1, Amount: 30},
		Transfer{From: 1, To: 3, Amount: 100, Flags: BalancingDebit}, // moves 30
		Transfer{From: 1, To: 3, Amount: 1, Flags: BalancingDebit},   // nothing left
		Transfer{From: 3, To: 2, Amount: 5, Flags: BalancingCredit},  // 2 has no debits
		Transfer{From: 2, To: 3, Amount: 7},
		Transfer{From: 3, To: 2, Amount: 50, Flags: BalancingCredit | Pending}, // holds 7
	)
	require.Equal(t, []FailReason{OK, OK, OK, OK, OK, ExceedsCredits, ExceedsDebits, OK, OK}, fails(res))
	require.Equal(t, int64(30), res[4].Entries[0].Delta)
	require.Equal(t, int64(7), res[8].Entries[0].Delta)
	require.Equal(t, CreditsPending, res[8].Entries[1].Column)

	res = submitAll(t, l, Transfer{From: 3, To: 1, Flags: Pending | ClosingDebit}, // closes 3, holds nothing
		Transfer{From: 3, To: 1, Amount: 1}, Transfer{From: 1, To: 3, Amount: 1})
	require.Equal(t, []FailReason{OK, DebitAccountAlreadyClosed, CreditAccountAlreadyClosed}, fails(res))
	closing := res[0].ID
	require.Equal(t, Closed, lookup(t, l, 3).Flags)
	// A chain that voids the closing and then fails: 3 stays closed.
	res = submitAll(t, l, Transfer{Flags: VoidPendingTransfer, PendingID: closing, Linked: true}, Transfer{From: 1, To: 3, Amount: 1 << 40})
	require.Equal(t, []FailReason{LinkedEventFailed, ExceedsCredits}, fails(res))
	res = submitAll(t, l, Transfer{From: 1, To: 3, Amount: 1})
	require.Equal(t, CreditAccountAlreadyClosed, res[0].Fail)
	require.NoError(t, l.Close())

	l, err = Open(cfg) // the closed state is replayed
	require.NoError(t, err)
	require.Equal(t, Closed, lookup(t, l, 3).Flags)
	res = submitAll(t, l, Transfer{Flags: VoidPendingTransfer, PendingID: closing}, Transfer{From: 3, To: 1, Amount: 1})
	require.Equal(t, []FailReason{OK, OK}, fails(res))
	require.Equal(t, AccountFlags(0), lookup(t, l, 3).Flags)
	// Closed for good by a posted closing transfer; a chain that closes and
	// then fails leaves it open.
	res = submitAll(t, l, Transfer{From: 3, To: 1, Flags: Pending | ClosingDebit, Linked: true}, Transfer{From: 1, To: 2, Amount: 1 << 40})
	require.Equal(t, []FailReason{LinkedEventFailed, ExceedsCredits}, fails(res))
	require.Equal(t, AccountFlags(0), lookup(t, l, 3).Flags)
	res = submitAll(t, l, Transfer{From: 3, To: 1, Amount: 1, Flags: Pending | ClosingDebit})
	res = submitAll(t, l, Transfer{Flags: PostPendingTransfer, PendingID: res[0].ID}, Transfer{From: 1, To: 3, Amount: 1})
	require.Equal(t, []FailReason{OK, CreditAccountAlreadyClosed}, fails(res))
	_, err = l.Snapshot(context.Background())
	require.NoError(t, err)
	require.NoError(t, l.Close())
	l, err = Open(cfg) // from the snapshot
	require.NoError(t, err)
	require.Equal(t, Closed, lookup(t, l, 3).Flags)
	require.NoError(t, l.Close())
	_, err = verifyDir(nil, cfg.Dir)
	require.NoError(t, err)
}

// TestVerifyFindsPendingMismatch: a snapshot whose pending book lacks an
// open pending transfer (its columns still hold it) is found by verify and
// refused by Open, naming the account.
func TestVerifyFindsPendingMismatch(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALRetention: -1}
	l, err := Open(cfg)
	require.NoError(t, err)
	res := submitAll(t, l, CreateAccount{ID: 1, Ledger: 1}, CreateAccount{ID: 2, Ledger: 1}, Transfer{From: 1, To: 2, Amount: 5, Flags: Pending})
	require.Equal(t, OK, res[2].Fail)
	require.NoError(t, l.Close())
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		c := cfg
		c, err := c.withDefaults()
		require.NoError(t, err)
		r, err := recoverState(db, &c)
		require.NoError(t, err)
		r.book.unadd(r.book.m[uint64(res[2].ID)])
		_, err = writeSnapshot(db, &c, &snapshotData{txID: r.last, refs: r.refs, accounts: r.accts.n, book: r.book.encode()}, r.bal, func() uint64 { return r.last }, nil, nil)
		require.NoError(t, err)
	})
	rep, err := verifyDir(nil, cfg.Dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.NotEmpty(t, rep.Findings)
	require.Contains(t, rep.Findings[len(rep.Findings)-1].Reason, "account 1 holds debits_pending 5 and credits_pending 0, its open pending transfers 0 and 0")
	_, err = Open(cfg)
	require.ErrorIs(t, err, ErrCorrupt)
}

// TestClosingInsideAChain: an account created by a chain and closed by a
// closing transfer of the same chain takes no transfer after it in the
// chain (the chain then fails whole) or after the chain applied.
func TestClosingInsideAChain(t *testing.T) {
	l, err := Open(Config{Dir: t.TempDir(), MaxAccounts: 16, SnapshotEvery: -1})
	require.NoError(t, err)
	defer l.Close()
	res := submitAll(t, l, CreateAccount{ID: 1, Ledger: 1},
		CreateAccount{ID: 2, Ledger: 1, Linked: true}, Transfer{From: 2, To: 1, Flags: Pending | ClosingDebit, Linked: true}, Transfer{From: 2, To: 1, Amount: 1})
	require.Equal(t, []FailReason{OK, LinkedEventFailed, LinkedEventFailed, DebitAccountAlreadyClosed}, fails(res))
	res = submitAll(t, l, CreateAccount{ID: 2, Ledger: 1, Linked: true}, Transfer{From: 2, To: 1, Flags: Pending | ClosingDebit},
		Transfer{From: 2, To: 1, Amount: 1}, Deposit{Account: 2, Amount: 1})
	require.Equal(t, []FailReason{OK, OK, DebitAccountAlreadyClosed, CreditAccountAlreadyClosed}, fails(res))
	require.Equal(t, Closed, lookup(t, l, 2).Flags)
	res = submitAll(t, l, Transfer{Flags: VoidPendingTransfer, PendingID: res[1].ID}, Deposit{Account: 2, Amount: 1})
	require.Equal(t, []FailReason{OK, OK}, fails(res))
	require.Equal(t, AccountFlags(0), lookup(t, l, 2).Flags)
}
