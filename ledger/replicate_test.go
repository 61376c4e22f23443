package ledger

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// applyTo is a Replicator that applies every batch to followers in the
// WAL stage: the in-process shape of a cluster, without consensus.
type applyTo struct {
	followers []*Ledger
	fail      error // once set, Replicate refuses
	mu        sync.Mutex
}

func (a *applyTo) Replicate(batch []byte, first, last uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail != nil {
		return a.fail
	}
	for _, f := range a.followers {
		if err := f.Apply(batch); err != nil {
			return err
		}
	}
	return nil
}

func replicaConfig(t *testing.T) Config {
	return Config{Dir: t.TempDir(), MaxAccounts: 64, WALMaxBatch: 64, RingSize: 256, DedupWindow: 128}
}

// mixedOp is the i'th transaction of the replication tests: deposits with
// idempotency keys (every fifth a retry), transfers, failures, composites.
func mixedOp(i int) Op {
	u := uint64(i)
	switch i % 5 {
	case 0, 1:
		return Deposit{Account: 1 + u%7, Amount: 10 + u%13, UserRef: 1000 + u}
	case 2:
		return Transfer{From: 1 + u%7, To: 1 + (u+3)%7, Amount: 7}
	case 3:
		return Composite{Legs: []Leg{{Account: 2, Delta: -3}, {Account: 4, Delta: 2}, {Account: 5, Delta: 1}}, Flags: NoNegative}
	default:
		return Withdrawal{Account: 1 + u%7, Amount: 1 << 40, UserRef: 1000 + u - 4} // fails: duplicate
	}
}

// TestReplicaIdentical: followers fed the leader's batches reach the
// leader's balances and hash, and keep them across a reopen (recovery
// recomputes the hash from the WAL); verify passes on every directory.
func TestReplicaIdentical(t *testing.T) {
	ctx := context.Background()
	fcfg := []Config{replicaConfig(t), replicaConfig(t)}
	r := &applyTo{}
	for _, c := range fcfg {
		f, err := OpenFollower(c)
		require.NoError(t, err)
		r.followers = append(r.followers, f)
	}
	lcfg := replicaConfig(t)
	l, err := OpenReplicated(lcfg, r)
	require.NoError(t, err)
	base := createAccounts(t, l, lcfg.MaxAccounts)

	const clients, per = 4, 300
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range per {
				res, err := l.SubmitAndWait(ctx, mixedOp(c*per+i), Replicated)
				if err != nil {
					t.Error(err)
					return
				}
				// Acknowledged at Replicated: every follower has it.
				for _, f := range r.followers {
					if x := f.index(Committed); x < uint64(res.ID) {
						t.Errorf("tx %d acknowledged, follower at %d", res.ID, x)
					}
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, l.Wait(ctx, base+TxID(clients*per), Snapshot))
	want := l.Hash()
	require.NotZero(t, want)
	bal := make([]int64, lcfg.MaxAccounts)
	for a := range bal {
		bal[a], err = l.Balance(uint64(a))
		require.NoError(t, err)
	}
	for _, f := range r.followers {
		require.Equal(t, want, f.Hash())
		for a := range bal {
			b, err := f.Balance(uint64(a))
			require.NoError(t, err)
			require.Equal(t, bal[a], b, "account %d", a)
		}
		require.NoError(t, f.Close())
	}
	require.NoError(t, l.Close())

	for _, c := range append(fcfg, lcfg) {
		rep, err := verifyDir(nil, c.Dir)
		require.NoError(t, err)
		require.Empty(t, rep.Findings)
		require.EqualValues(t, base+TxID(clients*per), rep.LastTx)
		// A follower promoted: Open recovers the same state and hash.
		p, err := Open(c)
		require.NoError(t, err)
		require.Equal(t, want, p.Hash())
		got, err := p.Balance(1)
		require.NoError(t, err)
		require.Equal(t, bal[1], got)
		// The durable dedup window came through: a retry is a duplicate.
		res, err := p.SubmitAndWait(ctx, Deposit{Account: 3, Amount: 1, UserRef: 1000}, Replicated)
		require.NoError(t, err)
		require.Equal(t, Duplicate, res.Fail)
		require.NoError(t, p.Close())
	}
}

// TestFollowerRefusesSubmits: every submit path of a follower fails with
// *NotLeaderError naming the leader it was told of.
func TestFollowerRefusesSubmits(t *testing.T) {
	f, err := OpenFollower(replicaConfig(t))
	require.NoError(t, err)
	defer f.Close()
	var nl *NotLeaderError
	_, err = f.Submit(Deposit{Account: 1, Amount: 1})
	require.ErrorAs(t, err, &nl)
	require.Empty(t, nl.Leader)
	f.SetLeader(2, "127.0.0.1:7001")
	_, err = f.SubmitAndWait(context.Background(), Deposit{Account: 1, Amount: 1}, Replicated)
	require.ErrorAs(t, err, &nl)
	require.Equal(t, "127.0.0.1:7001", nl.Leader)
	require.EqualValues(t, 2, nl.LeaderID)
	require.ErrorIs(t, err, ErrNotLeader)
	_, _, err = f.SubmitBatch([]Op{Deposit{Account: 1, Amount: 1}})
	require.ErrorAs(t, err, &nl)
	require.ErrorIs(t, (&Ledger{}).Apply(nil), ErrNotFollower)
}

// TestApplyRefusesGapsAndGarbage: a batch that skips transactions or fails
// its checksum changes nothing; an old batch is skipped.
func TestApplyRefusesGapsAndGarbage(t *testing.T) {
	var batches [][]byte
	r := &recorder{keep: &batches}
	l, err := OpenReplicated(replicaConfig(t), r)
	require.NoError(t, err)
	for _, op := range []Op{CreateAccount{ID: 1, Ledger: 1}, Deposit{Account: 1, Amount: 1}, Deposit{Account: 1, Amount: 2}} {
		res, err := l.SubmitAndWait(context.Background(), op, Replicated)
		require.NoError(t, err)
		require.Equal(t, OK, res.Fail)
	}
	require.NoError(t, l.Close())
	require.Len(t, batches, 3)

	f, err := OpenFollower(replicaConfig(t))
	require.NoError(t, err)
	defer f.Close()
	var ce *CorruptError
	require.ErrorAs(t, f.Apply(batches[1]), &ce) // tx 2 does not follow tx 0
	bad := append([]byte(nil), batches[0]...)
	bad[len(bad)-1] ^= 1
	require.ErrorAs(t, f.Apply(bad), &ce)
	require.NoError(t, f.Apply(batches[0]))
	require.NoError(t, f.Apply(batches[0])) // already applied
	require.NoError(t, f.Apply(batches[1]))
	b, err := f.Balance(1)
	require.NoError(t, err)
	require.EqualValues(t, 1, b, "created by tx 1, deposited 1 by tx 2")
	require.EqualValues(t, 2, f.index(Replicated))
}

type recorder struct{ keep *[][]byte }

func (r *recorder) Replicate(batch []byte, first, last uint64) error {
	*r.keep = append(*r.keep, append([]byte(nil), batch...))
	return nil
}

// TestReplicateFailureFailsLedger: a Replicate error (leadership lost)
// reaches the waiters as *NotLeaderError, nothing more is acknowledged,
// and the batch never reaches the leader's WAL.
func TestReplicateFailureFailsLedger(t *testing.T) {
	ctx := context.Background()
	cfg := replicaConfig(t)
	r := &applyTo{}
	l, err := OpenReplicated(cfg, r)
	require.NoError(t, err)
	_, err = l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5}, Replicated)
	require.NoError(t, err)
	r.mu.Lock()
	r.fail = &NotLeaderError{Leader: "127.0.0.1:9"}
	r.mu.Unlock()
	_, err = l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 7}, Committed)
	var nl *NotLeaderError
	require.ErrorAs(t, err, &nl)
	require.ErrorIs(t, err, ErrFailed)
	require.EqualValues(t, 1, l.index(Committed))
	require.Error(t, l.Close())

	p, err := Open(cfg)
	require.NoError(t, err)
	defer p.Close()
	x, err := p.Indexes()
	require.NoError(t, err)
	require.EqualValues(t, 1, x.Committed)
}

// TestSingleNodeReplicated: without a Replicator, Replicated is Committed.
func TestSingleNodeReplicated(t *testing.T) {
	l, err := Open(replicaConfig(t))
	require.NoError(t, err)
	defer l.Close()
	res, err := l.SubmitAndWait(context.Background(), Deposit{Account: 1, Amount: 5}, Replicated)
	require.NoError(t, err)
	require.NoError(t, l.Wait(context.Background(), res.ID, Replicated))
	require.GreaterOrEqual(t, l.index(Committed), uint64(res.ID))
}
