package ledger

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// SubmitFunc calls fn once per op with the same Result that Result reports,
// at every level, and refuses bad calls without calling fn.
func TestSubmitFunc(t *testing.T) {
	l := openTest(t, Config{})
	for _, level := range []Level{Computed, Committed, Snapshot} {
		got := make(chan Result, 1)
		id, err := l.SubmitFunc(Deposit{Account: 7, Amount: 11}, level, func(r Result, err error) {
			require.NoError(t, err)
			got <- r
		})
		require.NoError(t, err)
		r := <-got
		require.Equal(t, id, r.ID)
		lv, err := l.Status(id)
		require.NoError(t, err)
		require.GreaterOrEqual(t, lv, level, "delivered before the level was reached")
		require.NoError(t, l.Wait(context.Background(), id, Committed))
		want, err := l.Result(id)
		require.NoError(t, err)
		require.Equal(t, want, r)
	}
	never := func(Result, error) { t.Error("fn called for a refused submit") }
	_, err := l.SubmitFunc(Deposit{Account: 7, Amount: 1}, Sequenced, never)
	require.ErrorIs(t, err, ErrLevel)
	_, err = l.SubmitFunc(Deposit{Account: 7, Amount: 1}, Committed, nil)
	require.ErrorIs(t, err, ErrNilFunc)
	_, err = l.SubmitFunc(Deposit{Account: 7, Amount: 0}, Committed, never)
	require.ErrorIs(t, err, ErrZeroAmount)
	require.NoError(t, l.Close())
	_, err = l.SubmitFunc(Deposit{Account: 7, Amount: 1}, Committed, never)
	require.ErrorIs(t, err, ErrClosed)
}

// Close delivers every pending callback's result; a failure reports the
// error to every callback whose transaction did not get there: each fn is
// called exactly once either way.
func TestSubmitFuncExactlyOnce(t *testing.T) {
	for _, fail := range []bool{false, true} {
		l := openTest(t, Config{})
		const n = 5000
		var calls [n]atomic.Int32
		var ok, failed atomic.Int32
		var wg sync.WaitGroup
		boom := errors.New("disk on fire")
		wg.Add(n)
		for i := range n {
			k := i
			_, err := l.SubmitFunc(Deposit{Account: 1 + uint64(i)%100, Amount: 1}, Snapshot, func(r Result, err error) {
				defer wg.Done()
				calls[k].Add(1)
				if err != nil {
					require.ErrorIs(t, err, boom)
					failed.Add(1)
				} else {
					ok.Add(1)
				}
			})
			require.NoError(t, err)
			if fail && i == n/2 {
				l.fail(boom)
				for j := i + 1; j < n; j++ {
					wg.Done() // never submitted
				}
				_, err := l.SubmitFunc(Deposit{Account: 1, Amount: 1}, Snapshot, func(Result, error) { t.Error("called") })
				require.ErrorIs(t, err, boom)
				break
			}
		}
		err := l.Close()
		wg.Wait()
		if fail {
			require.ErrorIs(t, err, boom)
		} else {
			require.NoError(t, err)
			require.Equal(t, int32(n), ok.Load(), "Close delivers every result")
		}
		for i := range calls {
			if c := calls[i].Load(); c > 1 {
				t.Fatalf("fn %d called %d times", i, c)
			}
		}
		t.Logf("fail=%v: %d results, %d failures", fail, ok.Load(), failed.Load())
	}
}
