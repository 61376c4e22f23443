package client

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeServer speaks the protocol with scripted behaviour, to test what the
// client does when connections break.
type fakeServer struct {
	ln      net.Listener
	submits atomic.Int64 // submit frames received, over all connections
	conns   atomic.Int64
	// handle answers one request; returning false drops the connection
	// without answering.
	handle func(conn int64, h wire.Header, e *wire.Encoder) bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	open   []net.Conn
}

func newFake(t *testing.T, handle func(conn int64, h wire.Header, e *wire.Encoder) bool) *fakeServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f := &fakeServer{ln: ln, handle: handle}
	f.wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			n := f.conns.Add(1)
			f.mu.Lock()
			f.open = append(f.open, nc)
			f.mu.Unlock()
			f.wg.Go(func() { f.serve(n, nc) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, c := range f.open {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *fakeServer) serve(n int64, nc net.Conn) {
	defer nc.Close()
	fr := wire.NewFrameReader(bufio.NewReader(nc), 0)
	e := wire.NewEncoder()
	for {
		h, _, err := fr.Next()
		if err != nil {
			return
		}
		if h.Type == wire.TypeSubmit || h.Type == wire.TypeSubmitWait {
			f.submits.Add(1)
		}
		e.Reset()
		if !f.handle(n, h, e) {
			return
		}
		if e.Len() > 0 {
			if _, err := nc.Write(e.Bytes()); err != nil {
				return
			}
		}
	}
}

func (f *fakeServer) addr() string { return f.ln.Addr().String() }

// TestReconnectNeverResends: the first connection dies with a submit in
// flight; the submit fails with ErrConnLost and is not sent again, and the
// next call succeeds on a fresh connection.
func TestReconnectNeverResends(t *testing.T) {
	f := newFake(t, func(conn int64, h wire.Header, e *wire.Encoder) bool {
		if conn == 1 {
			return false // drop the first connection on its first request
		}
		switch h.Type {
		case wire.TypeSubmit:
			e.Submitted(h.ID, 7, 7)
		case wire.TypePing:
			e.Pong(h.ID)
		}
		return true
	})
	c, err := Dial(context.Background(), f.addr(), WithConns(1))
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	_, err = c.Submit(ctx, ledger.Deposit{Account: 1, Amount: 1})
	require.ErrorIs(t, err, ErrConnLost)
	assert.Equal(t, int64(1), f.submits.Load())
	id, err := c.Submit(ctx, ledger.Deposit{Account: 1, Amount: 1})
	require.NoError(t, err)
	assert.Equal(t, ledger.TxID(7), id)
	assert.Equal(t, int64(2), f.submits.Load(), "the lost submit was not resent")
	assert.Equal(t, int64(2), f.conns.Load())
}

func TestContextCancel(t *testing.T) {
	f := newFake(t, func(conn int64, h wire.Header, e *wire.Encoder) bool {
		if h.Type == wire.TypePing {
			e.Pong(h.ID)
		}
		return true // never answers anything but pings
	})
	c, err := Dial(context.Background(), f.addr(), WithConns(1))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Balance(ctx, 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, c.Ping(context.Background()), "the connection survives an abandoned call")
	cctx, cancel2 := context.WithCancel(context.Background())
	cancel2()
	_, err = c.Indexes(cctx)
	require.ErrorIs(t, err, context.Canceled)
}

func TestServerErrorsMapToLedgerErrors(t *testing.T) {
	f := newFake(t, func(conn int64, h wire.Header, e *wire.Encoder) bool {
		switch h.Type {
		case wire.TypeSubmit:
			e.Error(h.ID, &wire.Error{Code: wire.CodeLedgerZero, Index: 3, Message: "ledger must not be zero"})
		case wire.TypeResult:
			e.Error(h.ID, &wire.Error{Code: wire.CodeNotFound, Message: "no such tx"})
		case wire.TypeBalance:
			e.Error(h.ID, &wire.Error{Code: wire.CodeClosed, Message: "closed"})
		case wire.TypeStatus:
			e.BalanceIs(h.ID, 5) // the wrong answer type
		}
		return true
	})
	c, err := Dial(context.Background(), f.addr(), WithConns(1))
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	_, _, err = c.SubmitBatch(ctx, []ledger.Op{ledger.Deposit{Account: 1, Amount: 1}}, ledger.Committed)
	require.ErrorIs(t, err, ledger.ErrLedgerZero)
	var ie *ledger.InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, 3, ie.Index)
	_, err = c.Result(ctx, 1)
	assert.ErrorIs(t, err, ledger.ErrNotFound)
	var we *wire.Error
	require.ErrorAs(t, err, &we)
	assert.Equal(t, wire.CodeNotFound, we.Code)
	_, err = c.Balance(ctx, 1)
	assert.ErrorIs(t, err, ledger.ErrClosed)
	_, err = c.Status(ctx, 1)
	assert.ErrorIs(t, err, errProtocol)
}

func TestClose(t *testing.T) {
	block := make(chan struct{})
	f := newFake(t, func(conn int64, h wire.Header, e *wire.Encoder) bool {
		if h.Type == wire.TypeWait {
			<-block
		}
		return true
	})
	defer close(block)
	c, err := Dial(context.Background(), f.addr(), WithConns(1))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Wait(context.Background(), 1, ledger.Committed) }()
	require.Eventually(t, func() bool { return len(c.slots[0].p.Load().pendingIDs()) == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, <-done, ErrClosed)
	assert.ErrorIs(t, c.Ping(context.Background()), ErrClosed)
	require.NoError(t, c.Close())
}

func TestDialFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	_, err = Dial(context.Background(), addr, WithDialTimeout(time.Second))
	require.Error(t, err)
	var oe *net.OpError
	assert.True(t, errors.As(err, &oe))
}

// pendingIDs returns the ids in flight (for tests).
func (p *pconn) pendingIDs() []uint64 {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	ids := make([]uint64, 0, len(p.pending))
	for id := range p.pending {
		ids = append(ids, id)
	}
	return ids
}

// stuckDialer hands out net.Pipe connections. The first one's server end
// never reads (a stuck peer: a net.Pipe write blocks until the other end
// reads); later ones are served by answer.
type stuckDialer struct {
	mu    sync.Mutex
	dials int
	ends  []net.Conn
	wg    sync.WaitGroup
}

func (d *stuckDialer) dial(context.Context, string, string) (net.Conn, error) {
	cl, sv := net.Pipe()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dials++
	d.ends = append(d.ends, sv)
	if d.dials > 1 {
		d.wg.Go(func() {
			fr := wire.NewFrameReader(bufio.NewReader(sv), 0)
			e := wire.NewEncoder()
			for {
				h, _, err := fr.Next()
				if err != nil {
					return
				}
				e.Reset()
				switch h.Type {
				case wire.TypePing:
					e.Pong(h.ID)
				case wire.TypeSnapshot:
					e.SnapshotTaken(h.ID, 42)
				}
				if _, err := sv.Write(e.Bytes()); err != nil {
					return
				}
			}
		})
	}
	return cl, nil
}

func (d *stuckDialer) close() {
	d.mu.Lock()
	for _, c := range d.ends {
		c.Close()
	}
	d.mu.Unlock()
	d.wg.Wait()
}

// TestWriteTimeout: a server that stops reading cannot block a writer
// forever. The write gives up at the write timeout (no ctx deadline) and
// the call fails with ErrConnLost; a second call queued behind the stuck
// write fails with it; the next call dials a new connection and succeeds.
func TestWriteTimeout(t *testing.T) {
	d := &stuckDialer{}
	defer d.close()
	c, err := Dial(context.Background(), "stuck", WithConns(1), WithDialer(d.dial), WithWriteTimeout(500*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	queued := make(chan error, 1)
	t0 := time.Now()
	go func() {
		// starts once the first call is pending, so it queues behind
		// (or becomes) the stuck write; either way the connection dies
		// (the write timeout leaves it a wide margin to get there first)
		if !assert.Eventually(t, func() bool { return len(c.slots[0].p.Load().pendingIDs()) == 1 }, 5*time.Second, time.Millisecond) {
			queued <- errors.New("first call never pending")
			return
		}
		queued <- c.Ping(ctx)
	}()
	err = c.Ping(ctx)
	el := time.Since(t0)
	require.ErrorIs(t, err, ErrConnLost)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.GreaterOrEqual(t, el, 500*time.Millisecond)
	assert.Less(t, el, 10*time.Second)
	qerr := <-queued
	require.Error(t, qerr)
	require.ErrorIs(t, qerr, ErrConnLost)

	id, err := c.Snapshot(ctx)
	require.NoError(t, err, "a fresh connection")
	assert.Equal(t, ledger.TxID(42), id)
	assert.Equal(t, 2, d.dials)
}

// TestWriteDeadlineFromContext: with no write timeout, the caller's ctx
// deadline bounds the write.
func TestWriteDeadlineFromContext(t *testing.T) {
	d := &stuckDialer{}
	defer d.close()
	c, err := Dial(context.Background(), "stuck", WithConns(1), WithDialer(d.dial), WithWriteTimeout(0))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = c.Snapshot(ctx)
	el := time.Since(t0)
	require.ErrorIs(t, err, ErrConnLost, "the stuck write fails, and with it the connection")
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.GreaterOrEqual(t, el, 90*time.Millisecond)
	assert.Less(t, el, 5*time.Second)
	require.NoError(t, c.Ping(context.Background()))
}
