package ledger

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deposits submits n deposits and waits until the last is Committed (not
// Snapshot: Snapshot must cover everything Committed by itself).
func deposits(t *testing.T, l *Ledger, n int) TxID {
	t.Helper()
	var last TxID
	for i := range n {
		id, err := l.Submit(Deposit{Account: uint64(1 + i%100), Amount: 10})
		require.NoError(t, err)
		last = id
	}
	require.NoError(t, l.Wait(context.Background(), last, Committed))
	return last
}

// waitQueued returns once n Snapshot calls are queued for the persister.
func waitQueued(t *testing.T, l *Ledger, n int32) {
	t.Helper()
	require.Eventually(t, func() bool { return l.snapWaits.n.Load() == n }, 10*time.Second, time.Millisecond)
}

// TestSnapshotDurable: Snapshot writes a snapshot covering every committed
// transaction although periodic snapshots are off; reopening loads it and
// replays only the WAL after it, and Verify finds it valid and equal to
// the WAL replay.
func TestSnapshotDurable(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, MaxAccounts: 1024, SnapshotEvery: -1}
	l, err := Open(cfg)
	require.NoError(t, err)
	ctx := context.Background()

	id, err := l.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, TxID(0), id, "an empty ledger has nothing to cover")
	assert.Zero(t, l.Stats().Snapshots)

	last := deposits(t, l, 100)
	id, err = l.Snapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, last, id)
	st := l.Stats()
	assert.Equal(t, uint64(1), st.Snapshots)
	assert.Equal(t, last, st.SnapshotTx)
	assert.Equal(t, st.WALBatches+1, st.Syncs)

	// Nothing committed since: the durable snapshot already covers it.
	again, err := l.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, id, again)
	assert.Equal(t, uint64(1), l.Stats().Snapshots, "no second write")

	tail := deposits(t, l, 10)
	require.NoError(t, l.Close())

	rep, err := verifyDir(nil, dir)
	require.NoError(t, err)
	require.Equal(t, []snapshotCheck{{TxID: id, Valid: true, Replayed: true}}, rep.Snapshots)

	l2, err := Open(cfg)
	require.NoError(t, err)
	defer l2.Close()
	assert.Equal(t, uint64(id), l2.recovered.snapshot, "recovery loads the requested snapshot")
	assert.Equal(t, uint64(tail-id), l2.recovered.replayed, "and replays only the WAL after it")
	assert.Equal(t, id, l2.Stats().SnapshotTx)
	x, err := l2.Indexes()
	require.NoError(t, err)
	assert.Equal(t, tail, x.Committed)
}

// TestSnapshotConcurrent: many callers, with submitters running and
// periodic snapshots competing for the one buffer, each get a durable
// snapshot covering what was committed when they called.
func TestSnapshotConcurrent(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, MaxAccounts: 1024, SnapshotEvery: 64, RingSize: 1024}
	l, err := Open(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	stop := make(chan struct{})
	var sub sync.WaitGroup
	sub.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_, err := l.Submit(Deposit{Account: uint64(1 + i%500), Amount: 1})
			if !assert.NoError(t, err) {
				return
			}
		}
	})
	const callers = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	var newest TxID
	for range callers {
		wg.Go(func() {
			for range 5 {
				res, err := l.SubmitAndWait(ctx, Deposit{Account: 7, Amount: 1}, Committed)
				if !assert.NoError(t, err) {
					return
				}
				id, err := l.Snapshot(ctx)
				if !assert.NoError(t, err) {
					return
				}
				assert.GreaterOrEqual(t, id, res.ID, "covers what was committed before the call")
				assert.GreaterOrEqual(t, l.Stats().SnapshotTx, id, "durable when returned")
				mu.Lock()
				newest = max(newest, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(stop)
	sub.Wait()
	st := l.Stats()
	assert.Positive(t, st.Snapshots)
	require.NoError(t, l.Close())

	l2, err := Open(cfg)
	require.NoError(t, err)
	defer l2.Close()
	assert.GreaterOrEqual(t, l2.recovered.snapshot, uint64(newest), "recovery starts from a snapshot at least as new")
}

// TestSnapshotContext: a Snapshot that cannot be served (the test holds the
// snapshot buffer, as a persister busy writing would) returns ctx's error
// when its deadline passes or it is canceled, and leaves no waiter behind;
// once the buffer is back, the next call is served.
func TestSnapshotContext(t *testing.T) {
	l := openTest(t, Config{SnapshotEvery: -1})
	ctx := context.Background()
	deposits(t, l, 3)
	held := l.spare.Swap(nil)
	require.NotNil(t, held)

	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := l.Snapshot(dctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Zero(t, l.snapWaits.n.Load())

	cctx, cancel2 := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := l.Snapshot(cctx)
		done <- err
	}()
	waitQueued(t, l, 1)
	cancel2()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Zero(t, l.snapWaits.n.Load())

	_, err = l.Snapshot(cctx)
	require.ErrorIs(t, err, context.Canceled, "an ended context is refused before anything")

	l.spare.Store(held)
	l.pm.Wake()
	id, err := l.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, TxID(3), id)
}

// pendingSnapshot opens a ledger with three deposits and a Snapshot call
// that is queued and cannot proceed: the test holds the snapshot buffer
// (held, to be stored back) and done receives the call's error.
func pendingSnapshot(t *testing.T) (l *Ledger, held *snapshotData, done chan error) {
	t.Helper()
	l = openTest(t, Config{SnapshotEvery: -1})
	deposits(t, l, 3)
	held = l.spare.Swap(nil)
	done = make(chan error, 1)
	go func() {
		_, err := l.Snapshot(context.Background())
		done <- err
	}()
	waitQueued(t, l, 1)
	return l, held, done
}

// TestSnapshotClose: a call pending when Close runs returns ErrClosed, and
// every call after Close does too.
func TestSnapshotClose(t *testing.T) {
	l, held, done := pendingSnapshot(t)
	require.NoError(t, l.Close())
	require.ErrorIs(t, <-done, ErrClosed)
	_, err := l.Snapshot(context.Background())
	require.ErrorIs(t, err, ErrClosed)
	l.spare.Store(held)
}

// TestSnapshotFailure: a storage error releases a pending call with an
// error wrapping ErrFailed, and later calls get it too.
func TestSnapshotFailure(t *testing.T) {
	l, held, done := pendingSnapshot(t)
	boom := errors.New("disk on fire")
	l.fail(boom)
	err := <-done
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorIs(t, err, boom)
	_, err = l.Snapshot(context.Background())
	require.ErrorIs(t, err, ErrFailed)
	l.spare.Store(held)
	require.ErrorIs(t, l.Close(), boom)
}

// TestStats: the counters match what the test did, the relations
// documented on Stats hold, and a reopened ledger counts from zero.
func TestStats(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, MaxAccounts: 1024, SnapshotEvery: -1}
	l, err := Open(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	ops := []Op{
		CreateAccount{ID: 1, Ledger: 1, Flags: DebitsMustNotExceedCredits},
		CreateAccount{ID: 2, Ledger: 1, Flags: DebitsMustNotExceedCredits},
		CreateAccount{ID: 3, Ledger: 1, Flags: DebitsMustNotExceedCredits},
		CreateAccount{ID: 5, Ledger: 1, Flags: DebitsMustNotExceedCredits},
		Deposit{Account: 1, Amount: 100, UserRef: 9},
		Deposit{Account: 1, Amount: 100, UserRef: 9},                            // duplicate
		Withdrawal{Account: 2, Amount: 1},                                       // insufficient funds
		Transfer{From: 1, To: 2, Amount: 40},                                    // ok
		Composite{Legs: []Leg{{Account: 1, Delta: -1}, {Account: 2, Delta: 2}}}, // zero-sum violation
		Transfer{From: 2, To: 3, Amount: 41},                                    // insufficient funds
	}
	_, last, err := l.SubmitBatch(ops)
	require.NoError(t, err)
	require.NoError(t, l.Wait(ctx, last, Snapshot))

	st := l.Stats()
	assert.Equal(t, Indexes{Sequenced: 10, Computed: 10, Committed: 10, Snapshot: 10}, st.Indexes)
	assert.Equal(t, TxID(0), st.Recovered)
	assert.Equal(t, uint64(10), st.Submitted)
	assert.Equal(t, uint64(10), st.Committed)
	assert.Equal(t, uint64(4), st.Outcomes[KindCreateAccount][OK])
	assert.Equal(t, uint64(1), st.Outcomes[KindDeposit][OK])
	assert.Equal(t, uint64(1), st.Outcomes[KindDeposit][Duplicate])
	assert.Equal(t, uint64(1), st.Outcomes[KindWithdrawal][ExceedsCredits])
	assert.Equal(t, uint64(1), st.Outcomes[KindTransfer][OK])
	assert.Equal(t, uint64(1), st.Outcomes[KindTransfer][ExceedsCredits])
	assert.Equal(t, uint64(1), st.Outcomes[KindComposite][ZeroSumViolation])
	assert.Equal(t, uint64(2), st.Fails(ExceedsCredits))
	assert.Equal(t, uint64(6), st.Fails(OK))
	assert.Equal(t, uint64(0), st.Fails(FailReason(200)))
	var sum uint64
	for k := range st.Outcomes {
		for _, n := range st.Outcomes[k] {
			sum += n
		}
	}
	assert.Equal(t, uint64(10), sum)
	assert.Positive(t, st.WALBatches)
	assert.LessOrEqual(t, st.WALBatches, uint64(10))
	assert.Greater(t, st.WALBytes, uint64(2*56), "at least the two successful transfers and deposits")
	assert.Positive(t, st.WALSyncTime)
	assert.Equal(t, st.WALBatches, st.Syncs)
	assert.Zero(t, st.Snapshots)
	assert.Equal(t, 3, st.Pressure.Stages)
	assert.False(t, st.Closed)
	assert.False(t, st.Failed)

	_, err = l.Snapshot(ctx)
	require.NoError(t, err)
	st = l.Stats()
	assert.Equal(t, uint64(1), st.Snapshots)
	assert.Equal(t, st.WALBatches+1, st.Syncs)
	require.NoError(t, l.Close())
	st = l.Stats()
	assert.True(t, st.Closed)
	assert.True(t, st.Pressure.Closed)
	assert.Equal(t, uint64(10), st.Committed, "final values after Close")

	l2, err := Open(cfg)
	require.NoError(t, err)
	defer l2.Close()
	st = l2.Stats()
	assert.Equal(t, TxID(10), st.Recovered)
	assert.Equal(t, TxID(10), st.SnapshotTx)
	assert.Zero(t, st.Submitted)
	assert.Zero(t, st.WALBatches)
	assert.Zero(t, st.Fails(OK))
	id, err := l2.Submit(Deposit{Account: 5, Amount: 1})
	require.NoError(t, err)
	require.NoError(t, l2.Wait(ctx, id, Committed))
	st = l2.Stats()
	assert.Equal(t, uint64(1), st.Submitted)
	assert.Equal(t, uint64(1), st.Committed)
	assert.Equal(t, uint64(1), st.Outcomes[KindDeposit][OK])
}
