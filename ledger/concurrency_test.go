package ledger

import (
	"github.com/lanework/lanework/ledger/internal/wal"

	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Sixteen goroutines submit deposits whose account names the goroutine and
// whose amount is its sequence number: ids must be unique and contiguous, and
// the WAL must show each goroutine's deposits in submission order.
func TestConcurrentSubmitters(t *testing.T) {
	const (
		goroutines = 16
		perG       = 2000
	)
	l := openTest(t, Config{MaxAccounts: goroutines + 1, RingSize: 1024})
	base := createAccounts(t, l, goroutines+1)
	ids := make([][]TxID, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; {
				if i%7 == 3 && i+3 <= perG { // mix in batches
					ops := make([]Op, 3)
					for k := range ops {
						ops[k] = Deposit{Account: uint64(g + 1), Amount: uint64(i + k + 1)}
					}
					first, last, err := l.SubmitBatch(ops)
					if !assertNoError(t, err) {
						return
					}
					for id := first; id <= last; id++ {
						ids[g] = append(ids[g], id)
					}
					i += 3
					continue
				}
				id, err := l.Submit(Deposit{Account: uint64(g + 1), Amount: uint64(i + 1)})
				if !assertNoError(t, err) {
					return
				}
				ids[g] = append(ids[g], id)
				i++
			}
		}()
	}
	wg.Wait()
	total := goroutines*perG + int(base)
	seen := make([]bool, total+1)
	for g := range ids {
		require.Len(t, ids[g], perG)
		for i, id := range ids[g] {
			require.True(t, id > base && int(id) <= total, "id %d", id)
			require.False(t, seen[id], "id %d twice", id)
			seen[id] = true
			if i > 0 {
				require.Greater(t, id, ids[g][i-1])
			}
		}
	}
	require.NoError(t, l.Wait(context.Background(), TxID(total), Committed))
	next := make([]uint64, goroutines+1)
	require.NoError(t, scanLedgerWAL(l, uint64(base)+1, func(tx *walTx) error {
		require.Equal(t, OK, tx.fail)
		e := tx.entry(1)
		next[e.Account]++
		require.Equal(t, int64(next[e.Account]), e.Delta, "tx %d", tx.id)
		return nil
	}))
	x, err := l.Indexes()
	require.NoError(t, err)
	require.Equal(t, TxID(total), x.Sequenced)
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// Wait and Status from many goroutines while the pipeline runs.
func TestWaitersAndStatus(t *testing.T) {
	l := openTest(t, Config{})
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				id, err := l.Submit(Deposit{Account: uint64(g + 1), Amount: 1})
				if !assertNoError(t, err) {
					return
				}
				lvl := Level(Computed + Level(g%3))
				if !assertNoError(t, l.Wait(ctx, id, lvl)) {
					return
				}
				st, err := l.Status(id)
				assertNoError(t, err)
				if st < lvl {
					t.Errorf("tx %d: status %v after waiting for %v", id, st, lvl)
				}
			}
		}()
	}
	wg.Wait()
	// Waiting for a future id: released when it arrives.
	x, _ := l.Indexes()
	done := make(chan error, 1)
	go func() { done <- l.Wait(ctx, x.Sequenced+2, Snapshot) }()
	for range 2 {
		_, err := l.Submit(Deposit{Account: 1, Amount: 1})
		require.NoError(t, err)
	}
	require.NoError(t, <-done)
	// ctx is honoured.
	cctx, cancel := context.WithCancel(ctx)
	go func() { done <- l.Wait(cctx, x.Sequenced+1000, Committed) }()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	st, err := l.Status(x.Sequenced + 1000)
	require.NoError(t, err)
	require.Equal(t, Unknown, st)
	// A waiter blocked at Close gets ErrClosed.
	go func() { done <- l.Wait(ctx, x.Sequenced+1000, Committed) }()
	require.NoError(t, l.Close())
	require.ErrorIs(t, <-done, ErrClosed)
}

// The WAL batches adaptively: one transaction at a time commits one batch
// each; a burst commits as far fewer, larger batches.
func TestWALBatchesAdapt(t *testing.T) {
	l := openTest(t, Config{})
	ctx := context.Background()
	countKeys := func() int {
		n := 0
		_, err := wal.Scan(walOptions(&l.cfg, nil, nil), wal.Bounds{}, 0, func(wal.Segment, int64, []byte) error { n++; return nil })
		require.NoError(t, err)
		return n
	}
	for range 5 {
		_, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 1}, Committed)
		require.NoError(t, err)
	}
	require.Equal(t, 5, countKeys())
	st := l.Stats()
	require.Equal(t, uint64(5), st.WALGroupSizes.Counts[0], "five batches of one")
	require.Equal(t, uint64(5), st.WALGroupSizes.Count())
	ops := make([]Op, 8192)
	for i := range ops {
		ops[i] = Deposit{Account: 1 + uint64(i)%100, Amount: 1}
	}
	_, last, err := l.SubmitBatch(ops)
	require.NoError(t, err)
	require.NoError(t, l.Wait(ctx, last, Committed))
	burst := countKeys() - 5
	require.Less(t, burst, len(ops)/8, "a burst of %d committed as %d batches", len(ops), burst)
	t.Logf("a burst of %d transactions committed as %d batches", len(ops), burst)
	// The group-commit histogram saw the same batches, now mostly large.
	st = l.Stats()
	g := st.WALGroupSizes
	require.Equal(t, st.WALBatches, g.Count())
	require.Equal(t, st.Committed, g.Sum)
	require.Equal(t, st.WALBatches, st.WALSyncTimes.Count())
	require.Equal(t, uint64(st.WALSyncTime), st.WALSyncTimes.Sum)
	var big uint64
	for i := 4; i <= HistogramBuckets; i++ {
		big += g.Counts[i] // batches of more than 8
	}
	require.Positive(t, big, "group sizes %v", g.Counts)
}
