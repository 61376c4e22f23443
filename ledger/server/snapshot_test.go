package server

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/inspect"
	"github.com/lanework/lanework/ledger/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSnapshotOverTCPAndHTTP: a snapshot requested through the client,
// concurrently, through a raw frame and through POST /v1/snapshot covers
// every committed transaction and is what recovery loads after a restart.
func TestSnapshotOverTCPAndHTTP(t *testing.T) {
	f := startServer(t, Config{})
	c := f.dial(t)
	ctx := context.Background()
	_, last, err := c.SubmitBatch(ctx, []ledger.Op{ledger.Deposit{Account: 1, Amount: 5}, ledger.Deposit{Account: 2, Amount: 5}}, ledger.Committed)
	require.NoError(t, err)

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			id, err := c.Snapshot(ctx)
			if assert.NoError(t, err) {
				assert.Equal(t, last, id)
			}
		})
	}
	wg.Wait()
	st := f.l.Stats()
	assert.Equal(t, last, st.SnapshotTx)
	assert.Equal(t, uint64(1), st.Snapshots, "concurrent requests share one snapshot")

	res, err := c.SubmitAndWait(ctx, ledger.Deposit{Account: 3, Amount: 5}, ledger.Committed)
	require.NoError(t, err)
	r := newRaw(t, f)
	e := wire.NewEncoder()
	e.Snapshot(77)
	r.send(e.Bytes())
	h, body := r.next()
	require.Equal(t, wire.Header{Type: wire.TypeSnapshotTaken, ID: 77}, h)
	tx, err := r.dec.SnapshotTaken(body)
	require.NoError(t, err)
	assert.Equal(t, res.ID, tx)

	_, err = c.SubmitAndWait(ctx, ledger.Deposit{Account: 4, Amount: 5}, ledger.Committed)
	require.NoError(t, err)
	code, out := httpDo(t, "POST", f.httpURL()+"/v1/snapshot", "")
	require.Equal(t, http.StatusOK, code, out)
	assert.Equal(t, float64(f.base+4), out["tx_id"])
	code, _ = httpDo(t, "GET", f.httpURL()+"/v1/snapshot", "")
	assert.Equal(t, http.StatusMethodNotAllowed, code)

	// Restart: recovery starts from the requested snapshot.
	f.stop(t)
	rep, err := inspect.Verify(f.dir)
	require.NoError(t, err)
	require.NotEmpty(t, rep.Snapshots)
	newest := rep.Snapshots[len(rep.Snapshots)-1]
	assert.Equal(t, inspect.SnapshotCheck{TxID: f.base + 4, Valid: true, Replayed: true}, newest)
	f.l = reopened(t, f.dir)
	assert.Equal(t, f.base+4, f.l.Stats().SnapshotTx)
	f.s, err = New(f.l, Config{Addr: "127.0.0.1:0", HTTPAddr: "off"})
	require.NoError(t, err) // not started: the fixture's cleanup shuts it down and closes the ledger
}

// TestSnapshotLedgerClosed: with the ledger closed under the server, a
// snapshot request gets the ledger-closed error on both APIs.
func TestSnapshotLedgerClosed(t *testing.T) {
	f := startServer(t, Config{})
	c := f.dial(t)
	require.NoError(t, f.l.Close())
	_, err := c.Snapshot(context.Background())
	require.ErrorIs(t, err, ledger.ErrClosed)
	var we *wire.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, wire.CodeClosed, we.Code)
	code, out := httpDo(t, "POST", f.httpURL()+"/v1/snapshot", "")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, float64(wire.CodeClosed), out["code"])
}
