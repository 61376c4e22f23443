package server

import (
	"context"
	"sync"

	"github.com/lanework/lanework/ledger"
)

// snapGate lets one requested snapshot run at a time, over both APIs:
// requests that arrive while one is being written share its outcome
// instead of queueing another, so a client calling POST /v1/snapshot in a
// loop (or many clients at once) keeps at most one snapshot in flight.
type snapGate struct {
	mu  sync.Mutex
	cur *snapCall
	wg  sync.WaitGroup // the running snapshot; Shutdown waits for it
}

type snapCall struct {
	done chan struct{}
	tx   ledger.TxID
	err  error
}

// do returns the outcome of the snapshot in flight, or of one it starts.
// A shared snapshot covers what was committed when it started, which may
// be less than what was committed when this request arrived; a caller
// that needs more asks again. ctx bounds only this caller's wait.
func (g *snapGate) do(ctx context.Context, l *ledger.Ledger, abandon context.Context) (ledger.TxID, bool, error) {
	g.mu.Lock()
	c := g.cur
	shared := c != nil
	if c == nil {
		c = &snapCall{done: make(chan struct{})}
		g.cur = c
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			// The snapshot runs under the server's context, not the first
			// caller's: its waiters must not fail because that one left.
			c.tx, c.err = l.Snapshot(abandon)
			g.mu.Lock()
			g.cur = nil
			g.mu.Unlock()
			close(c.done)
		}()
	}
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.tx, shared, c.err
	case <-ctx.Done():
		return 0, shared, ctx.Err()
	}
}
