package ledger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// walBalancesUpTo replays the WAL of the undamaged directory dir up to tx
// after: each account's posted balance, noAccount for one not created.
func walBalancesUpTo(t *testing.T, cfg Config, after uint64) []int64 {
	t.Helper()
	cols := make([][numColumns]int64, cfg.MaxAccounts)
	exists := make([]bool, cfg.MaxAccounts)
	exists[SystemAccount] = true
	_, err := scanWAL(&cfg, 1, func(tx *walTx) error {
		if tx.id > after {
			return nil
		}
		if tx.kind == KindCreateAccount && tx.fail == OK {
			exists[tx.acct.id] = true
		}
		for i := 0; i < tx.n; i++ {
			e := tx.entry(i)
			cols[e.Account][e.Column] = e.Value
		}
		return nil
	})
	require.NoError(t, err)
	bal := make([]int64, cfg.MaxAccounts)
	for a := range bal {
		bal[a] = cols[a][CreditsPosted] - cols[a][DebitsPosted]
		if !exists[a] {
			bal[a] = noAccount
		}
	}
	return bal
}

// damagedLedger writes a ledger of several segments and snapshots, keeps an
// undamaged copy, and flips a byte in a batch in the middle of an older
// segment. It returns the damaged directory's config, the copy's, and the
// *CorruptError Open refuses it with.
func damagedLedger(t *testing.T) (Config, Config, *CorruptError) {
	t.Helper()
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 2000, WALRetention: -1, WALMaxBatch: 8, WALSegmentSize: 256 << 10}
	fillLedger(t, cfg, 12000)
	good := cfg
	good.Dir = copyDir(t, cfg.Dir)
	bs := walBatches(t, cfg.Dir)
	var victim batchAt
	for _, b := range bs {
		if b.file != bs[0].file && b.file != bs[len(bs)-1].file && b.first > 3000 {
			victim = b
			break
		}
	}
	require.NotZero(t, victim.first, "an older segment past tx 3000")
	flipByte(t, victim.file, victim.off+19+int64(victim.size)/2)
	_, err := Open(cfg)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.NotZero(t, ce.FirstTx)
	require.LessOrEqual(t, uint64(ce.FirstTx), victim.first)
	return cfg, good, ce
}

func TestRecoverTruncateAfter(t *testing.T) {
	cfg, good, ce := damagedLedger(t)
	after := uint64(ce.FirstTx) - 5 // inside a batch: its head is kept, re-encoded
	rec, err := truncateDir(nil, cfg.Dir, after)
	require.NoError(t, err)
	require.Equal(t, after, rec.TruncatedAfter)
	require.Equal(t, ce.File, rec.DamageFile)
	require.Equal(t, ce.Offset, rec.DamageOffset)
	require.Equal(t, uint64(1), rec.FirstTx)
	require.NotEmpty(t, rec.SnapshotsDropped, "snapshots past the cut go")
	for _, s := range rec.SnapshotsDropped {
		require.Greater(t, s+2000, after, "only snapshots that reach past the cut: %d", s)
	}
	for _, d := range []string{walNewDir, walOldDir} {
		_, err := os.Stat(filepath.Join(cfg.Dir, d))
		require.True(t, os.IsNotExist(err), d)
	}

	// The directory opens at the cut, with the balances of the log up to it.
	_, x, bal, err := openState(t, cfg)
	require.NoError(t, err)
	require.Equal(t, TxID(after), x.Committed)
	require.Equal(t, walBalancesUpTo(t, good, after), bal)

	// Verify is clean and reports the cut.
	rep, err := verifyDir(nil, cfg.Dir)
	require.NoError(t, err)
	require.Len(t, rep.truncations, 1)
	require.Equal(t, after, rep.truncations[0].TruncatedAfter)
	require.Equal(t, ce.Reason, rep.truncations[0].DamageReason)

	// New transactions continue after the cut; a ref of a dropped one is
	// new, a ref kept is remembered.
	refs := map[uint64]uint64{} // ref -> first tx that used it, from the undamaged log
	_, err = scanWAL(&good, 1, func(tx *walTx) error {
		if _, ok := refs[tx.userRef]; tx.userRef != 0 && !ok && tx.fail != Duplicate {
			refs[tx.userRef] = tx.id
		}
		return nil
	})
	require.NoError(t, err)
	var keptRef, droppedRef uint64
	for ref, id := range refs {
		if id <= after && id > after-1000 {
			keptRef = ref
		}
		if id > after && id < uint64(ce.FirstTx)+2000 {
			droppedRef = ref
		}
	}
	require.NotZero(t, keptRef)
	require.NotZero(t, droppedRef)
	l, err := Open(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	r, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 1, UserRef: droppedRef}, Committed)
	require.NoError(t, err)
	require.Equal(t, TxID(after+1), r.ID)
	require.Equal(t, OK, r.Fail, "its original was cut")
	r, err = l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 1, UserRef: keptRef}, Committed)
	require.NoError(t, err)
	require.Equal(t, Duplicate, r.Fail)
	require.Equal(t, TxID(refs[keptRef]), r.DupOf)
	require.NoError(t, l.Close())
}

// Refusals change nothing: a cut at or beyond the damage, a directory
// without damage, no transaction named.
func TestRecoverRefuses(t *testing.T) {
	cfg, good, ce := damagedLedger(t)
	before := dirDigest(t, cfg.Dir)
	for _, after := range []uint64{uint64(ce.FirstTx), uint64(ce.FirstTx) + 100, 1 << 40, 0} {
		_, err := truncateDir(nil, cfg.Dir, after)
		require.ErrorIs(t, err, ErrRecover, "after %d", after)
		if after != 0 {
			require.Contains(t, err.Error(), "at or beyond the damage")
		}
		require.Equal(t, before, dirDigest(t, cfg.Dir), "after %d", after)
	}
	gbefore := dirDigest(t, good.Dir)
	_, err := truncateDir(nil, good.Dir, 100)
	require.ErrorIs(t, err, ErrRecover)
	require.Contains(t, err.Error(), "no damage")
	require.Equal(t, gbefore, dirDigest(t, good.Dir))
	_, err = truncateDir(nil, t.TempDir(), 5)
	require.ErrorIs(t, err, ErrNoLedger)
}

// A recover a crash cut short, after the cut log replaced the damaged one
// but before pebble recorded it: Open refuses the directory and says to
// run recover again, which finishes the job.
func TestRecoverInterrupted(t *testing.T) {
	cfg, _, ce := damagedLedger(t)
	after := uint64(ce.FirstTx) - 1
	done := cfg
	done.Dir = copyDir(t, cfg.Dir)
	_, err := truncateDir(nil, done.Dir, after)
	require.NoError(t, err)
	// The state just before finishTruncate: wal.old is the damaged log,
	// wal.new the cut one (the same files the finished run wrote).
	require.NoError(t, os.Rename(filepath.Join(cfg.Dir, walDir), filepath.Join(cfg.Dir, walOldDir)))
	require.NoError(t, os.CopyFS(filepath.Join(cfg.Dir, walNewDir), os.DirFS(filepath.Join(done.Dir, walDir))))
	_, err = Open(cfg)
	require.ErrorIs(t, err, ErrRecover)
	require.Contains(t, err.Error(), "interrupted ledger recover")
	_, err = truncateDir(nil, cfg.Dir, after+1)
	require.ErrorIs(t, err, ErrRecover, "another cut than the interrupted one")
	require.True(t, errors.Is(err, ErrRecover))
	// The failed attempt swapped wal.new in; the rerun with the right
	// value finishes from there.
	_, err = truncateDir(nil, cfg.Dir, after)
	require.NoError(t, err)
	_, x, bal, err := openState(t, cfg)
	require.NoError(t, err)
	_, wantX, wantBal, err := openState(t, done)
	require.NoError(t, err)
	require.Equal(t, wantX, x)
	require.Equal(t, wantBal, bal)
}
