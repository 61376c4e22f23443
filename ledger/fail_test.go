package ledger

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// A storage error stops the pipeline: every call then reports it, and Close
// still joins every goroutine (goleak checks) and returns it.
func TestStorageFailureStopsLedger(t *testing.T) {
	l := openTest(t, Config{})
	ctx := context.Background()
	_, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5}, Snapshot)
	require.NoError(t, err)
	boom := errors.New("disk on fire")
	blocked := make(chan error, 1)
	go func() { blocked <- l.Wait(ctx, 1000, Committed) }()
	l.fail(boom)
	_, err = l.Submit(Deposit{Account: 1, Amount: 1})
	require.ErrorIs(t, err, ErrFailed)
	require.ErrorIs(t, err, boom)
	_, err = l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 1}, Committed)
	require.ErrorIs(t, err, ErrFailed)
	err = <-blocked
	require.ErrorIs(t, err, ErrFailed)
	err = l.Close()
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, l.Close(), boom)
}
