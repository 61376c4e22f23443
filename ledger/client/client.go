package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
)

var (
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("client: closed")
	// ErrConnLost is wrapped by the error of a call whose connection broke
	// before its answer arrived. For a submit the outcome is unknown: the
	// server may or may not have executed it (see the package doc).
	ErrConnLost = errors.New("client: connection lost")
)

// Client is a connection pool to one ledger server. Its methods are safe
// for concurrent use.
type Client struct {
	addrMu sync.Mutex
	addr   string // the server dialed; with WithCluster, the replica followed
	opts   options
	slots  []slot
	next   atomic.Uint32
	closed atomic.Bool
}

// errDial marks a call that failed before its request was sent.
var errDial = errors.New("client: not connected")

func (c *Client) target() string {
	c.addrMu.Lock()
	defer c.addrMu.Unlock()
	return c.addr
}

type slot struct {
	mu sync.Mutex // held while (re)dialing
	p  atomic.Pointer[pconn]
}

// Dial connects to the server at addr (host:port) with the pool size and
// limits of opts. It opens every pooled connection before returning and
// fails if any cannot be opened within ctx and the dial timeout.
func Dial(ctx context.Context, addr string, opts ...Option) (*Client, error) {
	o := defaultOptions()
	for _, f := range opts {
		f(&o)
	}
	c := &Client{addr: addr, opts: o, slots: make([]slot, o.conns)}
	for tries := 0; ; tries++ {
		err := c.connectAll(ctx)
		if err == nil {
			return c, nil
		}
		// A cluster client starts at any replica that answers.
		if len(o.cluster) == 0 || tries >= len(o.cluster) || !errors.Is(err, errDial) {
			c.Close()
			return nil, err
		}
		c.follow("")
	}
}

func (c *Client) connectAll(ctx context.Context) error {
	for i := range c.slots {
		if _, err := c.conn(ctx, &c.slots[i]); err != nil {
			return err
		}
	}
	return nil
}

// Close closes every connection; calls in flight fail with ErrClosed.
// Close is idempotent.
func (c *Client) Close() error {
	c.closed.Store(true)
	for i := range c.slots {
		s := &c.slots[i]
		s.mu.Lock()
		if p := s.p.Load(); p != nil {
			p.die(ErrClosed)
		}
		s.mu.Unlock()
	}
	return nil
}

// conn returns the slot's live connection, dialing a new one if it has
// none or its connection died.
func (c *Client) conn(ctx context.Context, s *slot) (*pconn, error) {
	if p := s.p.Load(); p != nil && !p.isDead() {
		return p, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if p := s.p.Load(); p != nil && !p.isDead() {
		return p, nil
	}
	dctx := ctx
	if c.opts.timeout > 0 {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(ctx, c.opts.timeout)
		defer cancel()
	}
	addr := c.target()
	nc, err := c.opts.dial(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: dial %s: %w", errDial, addr, err)
	}
	if nc, err = c.handshake(dctx, addr, nc); err != nil {
		return nil, fmt.Errorf("%w: %w", errDial, err)
	}
	p := newPconn(nc, c.opts.maxFrame, c.opts.writeTimeout)
	s.p.Store(p)
	return p, nil
}

// handshake starts TLS and sends the hello, as the options ask, before
// the connection carries requests. It closes nc on failure.
func (c *Client) handshake(ctx context.Context, addr string, nc net.Conn) (net.Conn, error) {
	if c.opts.tls != nil {
		cfg := c.opts.tls.Clone()
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("client: tls %s: %w", addr, err)
		}
		nc = tc
	}
	if c.opts.token == "" {
		return nc, nil
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	err := hello(nc, c.opts.token)
	_ = nc.SetDeadline(time.Time{})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("client: hello %s: %w", addr, err)
	}
	return nc, nil
}

// hello sends the token and reads the answer. The server sends nothing
// else before it, so reading unbuffered leaves nothing behind.
func hello(nc net.Conn, token string) error {
	e := wire.NewEncoder()
	e.Hello(0, token)
	if _, err := nc.Write(e.Bytes()); err != nil {
		return err
	}
	h, body, err := wire.NewFrameReader(nc, 0).Next()
	if err != nil {
		return err
	}
	dec := wire.NewDecoder()
	switch h.Type {
	case wire.TypeWelcome:
		_, err := dec.Welcome(body)
		return err
	case wire.TypeError:
		we, err := dec.Error(body)
		if err != nil {
			return err
		}
		return we.Err()
	}
	return fmt.Errorf("%w: got %v, want %v", errProtocol, h.Type, wire.TypeWelcome)
}

// do sends one request on the next pooled connection and waits for its
// answer. A request is written at most once.
func (c *Client) do(ctx context.Context, want wire.Type, encode func(e *wire.Encoder, id uint64)) (*call, error) {
	return c.doCall(ctx, &call{want: want}, encode)
}

// doCall is do for a prepared call.
func (c *Client) doCall(ctx context.Context, cl *call, encode func(e *wire.Encoder, id uint64)) (*call, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &c.slots[int(c.next.Add(1))%len(c.slots)]
	p, err := c.conn(ctx, s)
	if err != nil {
		return nil, err
	}
	cl.done = make(chan struct{})
	id, err := p.start(cl)
	if err != nil {
		return nil, c.mapErr(err)
	}
	dl, _ := ctx.Deadline()
	p.send(func(e *wire.Encoder) { encode(e, id) }, dl)
	select {
	case <-cl.done:
		return c.finish(cl)
	case <-ctx.Done():
		select {
		case <-cl.done: // answered (or failed) as ctx ended: report that
			return c.finish(cl)
		default:
		}
		p.abandon(id)
		return nil, ctx.Err()
	}
}

// submit is do for a submit of ops: with WithCluster it follows the
// leader and retries as WithCluster says.
func (c *Client) submit(ctx context.Context, want wire.Type, ops []ledger.Op, encode func(e *wire.Encoder, id uint64)) (*call, error) {
	for {
		cl, err := c.do(ctx, want, encode)
		if err == nil || len(c.opts.cluster) == 0 {
			return cl, err
		}
		var we *wire.Error
		switch {
		case errors.As(err, &we) && we.Code == wire.CodeNotLeader:
			c.follow(we.Message) // refused before it was sequenced
		case errors.Is(err, errDial):
			c.follow("")
		case (errors.Is(err, ErrConnLost) || errors.Is(err, ledger.ErrClosed) || errors.Is(err, ledger.ErrFailed) ||
			errors.Is(err, wire.ErrShutdown)) && allRefs(ops):
			c.follow("") // outcome unknown: the refs make the retry safe
		default:
			return cl, err
		}
		t := time.NewTimer(c.opts.backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

func allRefs(ops []ledger.Op) bool {
	for _, op := range ops {
		if ledger.UserRefOf(op) == 0 {
			return false
		}
	}
	return len(ops) > 0
}

// follow points the client at addr, or with "" at the replica after the
// current one in the cluster's list, and closes the pooled connections
// to the old one (calls in flight on them fail with ErrConnLost).
func (c *Client) follow(addr string) {
	c.addrMu.Lock()
	if addr == "" {
		i := slices.Index(c.opts.cluster, c.addr)
		addr = c.opts.cluster[(i+1)%len(c.opts.cluster)]
	}
	moved := addr != c.addr
	c.addr = addr
	c.addrMu.Unlock()
	if !moved {
		return
	}
	for i := range c.slots {
		if p := c.slots[i].p.Load(); p != nil {
			p.die(ErrConnLost)
		}
	}
}

func (c *Client) finish(cl *call) (*call, error) {
	if cl.err != nil {
		return nil, c.mapErr(cl.err)
	}
	return cl, nil
}

func (c *Client) mapErr(err error) error {
	if c.closed.Load() && errors.Is(err, ErrConnLost) {
		return ErrClosed
	}
	return err
}

// Ping checks that the server answers.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.do(ctx, wire.TypePong, func(e *wire.Encoder, id uint64) { e.Ping(id) })
	return err
}

// Submit sends op without waiting for it to execute and returns its id once
// the server sequenced it.
func (c *Client) Submit(ctx context.Context, op ledger.Op) (ledger.TxID, error) {
	ops := [1]ledger.Op{op}
	first, _, err := c.SubmitBatch(ctx, ops[:], ledger.Sequenced)
	return first, err
}

// SubmitBatch sends ops as one atomic batch with contiguous ids first..last
// and returns once the last has reached level (ledger.Sequenced: as soon as
// it is sequenced; ledger.Committed: once the whole batch is durable). If
// an op is invalid, none is submitted and the *ledger.InputError names its
// index. The server bounds the batch size (server.Config.MaxBatch).
func (c *Client) SubmitBatch(ctx context.Context, ops []ledger.Op, level ledger.Level) (first, last ledger.TxID, err error) {
	cl, err := c.submit(ctx, wire.TypeSubmitted, ops, func(e *wire.Encoder, id uint64) { e.Submit(id, level, ops) })
	if err != nil {
		return 0, 0, err
	}
	return cl.first, cl.last, nil
}

// SubmitBatchResults submits ops as one batch and returns one Result per
// op, in op order, once every op reached level (Computed, Committed or
// Snapshot): each op's id and its own fail reason.
func (c *Client) SubmitBatchResults(ctx context.Context, ops []ledger.Op, level ledger.Level) ([]ledger.Result, error) {
	if level < ledger.Computed || level > ledger.Snapshot {
		return nil, ledger.ErrLevel
	}
	cl, err := c.submit(ctx, wire.TypeSubmitted, ops, func(e *wire.Encoder, id uint64) { e.Submit(id, level, ops) })
	if err != nil {
		return nil, err
	}
	if len(cl.results) != len(ops) {
		return nil, fmt.Errorf("%w: %d results for %d ops", wire.ErrMalformed, len(cl.results), len(ops))
	}
	return cl.results, nil
}

// SubmitAndWait submits op and returns its Result once it reached level
// (Computed, Committed or Snapshot). If ctx ends first the transaction
// still executes.
func (c *Client) SubmitAndWait(ctx context.Context, op ledger.Op, level ledger.Level) (ledger.Result, error) {
	cl, err := c.submit(ctx, wire.TypeResultIs, []ledger.Op{op}, func(e *wire.Encoder, id uint64) { e.SubmitWait(id, level, op) })
	if err != nil {
		return ledger.Result{}, err
	}
	return cl.res, nil
}

// Wait returns once transaction id reached level. The id must have been
// sequenced (else ledger.ErrNotFound).
func (c *Client) Wait(ctx context.Context, id ledger.TxID, level ledger.Level) error {
	_, err := c.do(ctx, wire.TypeWaited, func(e *wire.Encoder, rid uint64) { e.Wait(rid, id, level) })
	return err
}

// Balance returns account's balance as of the ledger's Snapshot index.
func (c *Client) Balance(ctx context.Context, account uint64) (int64, error) {
	cl, err := c.do(ctx, wire.TypeBalanceIs, func(e *wire.Encoder, id uint64) { e.Balance(id, account) })
	if err != nil {
		return 0, err
	}
	return cl.bal, nil
}

// Lookup returns account id with its columns, as ledger.Ledger.Lookup
// does (an account not found is ledger.ErrAccountNotFound).
func (c *Client) Lookup(ctx context.Context, id uint64) (ledger.Account, error) {
	cl, err := c.do(ctx, wire.TypeAccountIs, func(e *wire.Encoder, rid uint64) { e.Lookup(rid, id) })
	if err != nil {
		return ledger.Account{}, err
	}
	return cl.acct, nil
}

// Status returns the highest level transaction id has reached.
func (c *Client) Status(ctx context.Context, id ledger.TxID) (ledger.Level, error) {
	cl, err := c.do(ctx, wire.TypeStatusIs, func(e *wire.Encoder, rid uint64) { e.Status(rid, id) })
	if err != nil {
		return 0, err
	}
	return cl.level, nil
}

// Result returns the outcome of a committed transaction.
func (c *Client) Result(ctx context.Context, id ledger.TxID) (ledger.Result, error) {
	cl, err := c.do(ctx, wire.TypeResultIs, func(e *wire.Encoder, rid uint64) { e.Result(rid, id) })
	if err != nil {
		return ledger.Result{}, err
	}
	return cl.res, nil
}

// Indexes returns the ledger's progress marks.
func (c *Client) Indexes(ctx context.Context) (ledger.Indexes, error) {
	cl, err := c.do(ctx, wire.TypeIndexesAre, func(e *wire.Encoder, id uint64) { e.Indexes(id) })
	if err != nil {
		return ledger.Indexes{}, err
	}
	return cl.idx, nil
}

// Snapshot asks the server to write a snapshot now and returns, once it is
// durable, the last transaction it covers: at least every transaction
// committed when the server received the request (see
// ledger.Ledger.Snapshot). If ctx ends first the snapshot may still be
// written.
func (c *Client) Snapshot(ctx context.Context) (ledger.TxID, error) {
	cl, err := c.do(ctx, wire.TypeSnapshotTaken, func(e *wire.Encoder, id uint64) { e.Snapshot(id) })
	if err != nil {
		return 0, err
	}
	return cl.first, nil
}
