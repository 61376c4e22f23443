package ledger

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// retainingConfig snapshots often, keeps little WAL and rolls small
// segments, so that a few thousand transactions prune old segments.
func retainingConfig(t *testing.T) Config {
	c := replicaConfig(t)
	c.SnapshotEvery, c.WALRetention, c.WALSegmentSize = 1500, 500, 256<<10
	return c
}

// TestFollowerRetentionAndCheckpoint: a follower snapshots and prunes its
// WAL like the leader, and the two keep equal hashes although they prune
// at other moments (the hash goes on from what each segment's creation
// recorded). A checkpoint of the leader, installed in a new directory,
// opens as a follower with the leader's balances and hash, takes the
// following batches, passes verify, and once promoted still knows the
// refs used before the checkpoint's snapshot (exactly-once across it).
func TestFollowerRetentionAndCheckpoint(t *testing.T) {
	ctx := context.Background()
	fcfg := retainingConfig(t)
	f, err := OpenFollower(fcfg)
	require.NoError(t, err)
	// A follower with the history index on keeps the WAL its index will
	// catch up from when it leads: all of it here.
	icfg := retainingConfig(t)
	icfg.Index = true
	fi, err := OpenFollower(icfg)
	require.NoError(t, err)
	r := &applyTo{followers: []*Ledger{f, fi}}
	lcfg := retainingConfig(t)
	l, err := OpenReplicated(lcfg, r)
	require.NoError(t, err)
	createAccounts(t, l, lcfg.MaxAccounts)
	pending := 0 // pending transfers created (the post of one fails the count in its batch)
	submit := func(from, to int) TxID {
		var last TxID
		for i := from; i < to; i += 100 {
			ops := make([]Op, 0, 100)
			for k := i; k < min(i+100, to); k++ {
				ops = append(ops, mixedOp(k))
			}
			// Pending transfers, some left open, in every snapshot's
			// pending book; every other one posted in the next batch.
			ops = append(ops, Transfer{From: 1 + uint64(i)%7, To: 9, Amount: 1, Flags: Pending, UserRef: 1<<40 + uint64(i)})
			if i%200 == 100 {
				ops = append(ops, Transfer{Flags: PostPendingTransfer, PendingID: last, UserRef: 1<<41 + uint64(i)})
			}
			res, err := l.SubmitBatchAndWait(ctx, ops, Committed)
			require.NoError(t, err)
			last = res[len(res)-1].ID
			if r := res[len(res)-1]; r.Fail == OK {
				pending++
			}
		}
		require.NoError(t, l.Wait(ctx, last, Snapshot))
		return last
	}
	last := submit(0, 12000)
	require.Greater(t, pending, 20, "few pending transfers in the books")
	ls, fs := l.Stats(), f.Stats()
	require.NotZero(t, fs.Snapshots, "the follower took no snapshot")
	require.Equal(t, ls.Hash, fs.Hash)
	for _, d := range []string{lcfg.Dir, fcfg.Dir} {
		segs, _, err := listSegments(vfs.Default, d)
		require.NoError(t, err)
		require.Greater(t, segs[0].First, uint64(1), "%s kept its first segment", d)
	}
	segs, _, err := listSegments(vfs.Default, icfg.Dir)
	require.NoError(t, err)
	require.EqualValues(t, 1, segs[0].First, "the indexing follower pruned its WAL")
	require.Equal(t, ls.Hash, fi.Hash())
	require.NoError(t, fi.Close())
	r.mu.Lock()
	r.followers = r.followers[:1]
	r.mu.Unlock()
	// Promoted, it indexes the whole history (the catch-up had the WAL).
	pi, err := Open(icfg)
	require.NoError(t, err)
	require.False(t, pi.ixCatch.restarted, "the index restarted: the WAL did not reach back")
	require.EqualValues(t, last, pi.ixCatch.txs, "the index caught up from the first transaction")
	require.NoError(t, pi.Close())

	// A checkpoint, installed over a directory that holds something else.
	var ck bytes.Buffer
	at, err := l.WriteCheckpoint(ctx, &ck)
	require.NoError(t, err)
	require.Equal(t, last, at)
	ncfg := retainingConfig(t)
	ncfg.Dir = filepath.Join(t.TempDir(), "new")
	old, err := Open(ncfg)
	require.NoError(t, err)
	require.NoError(t, old.Close())
	// Cut short or damaged: refused, the directory untouched.
	_, err = InstallCheckpoint(ncfg, bytes.NewReader(ck.Bytes()[:ck.Len()-3]))
	require.ErrorIs(t, err, ErrCheckpoint)
	bad := bytes.Clone(ck.Bytes())
	bad[len(bad)/2] ^= 1
	_, err = InstallCheckpoint(ncfg, bytes.NewReader(bad))
	require.ErrorIs(t, err, ErrCheckpoint)
	rep, err := verifyDir(nil, ncfg.Dir)
	require.NoError(t, err)
	require.Zero(t, rep.LastTx)

	got, err := InstallCheckpoint(ncfg, bytes.NewReader(ck.Bytes()))
	require.NoError(t, err)
	require.Equal(t, last, got)
	n, err := OpenFollower(ncfg)
	require.NoError(t, err)
	require.Equal(t, l.Hash(), n.Hash())
	r.mu.Lock()
	r.followers = append(r.followers, n)
	r.mu.Unlock()
	last = submit(12000, 14000)
	for a := uint64(0); a < lcfg.MaxAccounts; a++ {
		want, err := l.Balance(a)
		require.NoError(t, err)
		b, err := n.Balance(a)
		require.NoError(t, err)
		require.Equal(t, want, b, "account %d", a)
	}
	require.Equal(t, l.Hash(), n.Hash())
	require.Equal(t, l.Hash(), f.Hash())
	for _, x := range []*Ledger{l, f, n} {
		require.NoError(t, x.Close())
	}
	for _, c := range []Config{lcfg, fcfg, ncfg} {
		rep, err := verifyDir(nil, c.Dir)
		require.NoError(t, err)
		require.Empty(t, rep.Findings, c.Dir)
		require.Equal(t, last, rep.LastTx)
	}
	// Promoted, the installed replica answers a retry of the first ref
	// (long before its snapshot) as a duplicate of the original.
	p, err := Open(ncfg)
	require.NoError(t, err)
	defer p.Close()
	res, err := p.SubmitAndWait(ctx, mixedOp(0), Committed)
	require.NoError(t, err)
	require.Equal(t, Duplicate, res.Fail)
}
