package server

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
)

// conn is one binary-protocol connection: a reader goroutine (serve) and a
// writer goroutine (write); its waiting requests run on the server's
// workers.
type conn struct {
	s   *Server
	nc  net.Conn
	out outQueue

	sem      chan struct{} // in-flight tokens: a request holds one until its answer is encoded
	broken   chan struct{} // closed when the connection is dead (write failed or killed)
	brkOnce  sync.Once
	stop     atomic.Bool   // Shutdown: read no further requests
	quit     chan struct{} // closed by stopReading or kill: ends a wait for frame memory
	quitOnce sync.Once
	linger   bool  // set by the reader: drain input before closing
	scope    Scope // what the hello granted (ReadWrite without tokens); owned by the reader
	waits    sync.WaitGroup
	slowed   atomic.Bool // closed as a client that does not read: counted once

	// What the reader and writer wait on, for diagnostics: stored at the
	// waits, never read by the server itself.
	readWait  atomic.Int32  // waitNone, waitRequest or waitToken
	writeFrom atomic.Int64  // start of the write in progress (UnixNano); 0: none
	written   atomic.Uint64 // bytes written
}

// The reader's waits (conn.readWait).
const (
	waitNone    = iota
	waitRequest // for the next frame from the client
	waitToken   // for an in-flight token
)

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, sem: make(chan struct{}, s.cfg.MaxInFlight), broken: make(chan struct{}),
		quit: make(chan struct{})}
	if s.auth == nil {
		c.scope = ReadWrite
	}
	c.out.sig = make(chan struct{}, 1)
	return c
}

// stopReading makes the reader return at its next network read.
func (c *conn) stopReading() {
	c.stop.Store(true)
	c.quitOnce.Do(func() { close(c.quit) })
	_ = c.nc.SetReadDeadline(time.Now())
}

func (c *conn) isBroken() bool {
	select {
	case <-c.broken:
		return true
	default:
		return false
	}
}

// kill closes the connection at once.
// awaitAnswers waits until every request read has its answer queued, or
// until Shutdown gives up (the server's context ends): answers that a
// ledger callback queues after that are discarded with the connection.
func (c *conn) awaitAnswers() {
	done := make(chan struct{})
	go func() {
		c.waits.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-c.s.ctx.Done():
	}
}

func (c *conn) kill() {
	c.brkOnce.Do(func() { close(c.broken) })
	c.quitOnce.Do(func() { close(c.quit) })
	_ = c.nc.Close()
}

func (c *conn) serve() {
	defer c.s.forget(c)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.write()
	}()
	if c.handshake() {
		c.read()
	}
	c.awaitAnswers()
	c.out.close()
	<-writerDone
	if c.stop.Load() && !c.isBroken() {
		// tell the client why the connection ends: requests it sent
		// after Shutdown began were not read and will get no answer
		c.s.refuse(c.nc, &wire.Error{Code: wire.CodeShutdown, Message: "server shutting down"})
		return
	}
	if c.linger {
		c.lingerClose()
		return
	}
	_ = c.nc.Close()
}

// handshake completes TLS, if the connection speaks it, within
// ReadTimeout; false if it failed (the connection is then closed).
func (c *conn) handshake() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	_ = tc.SetDeadline(time.Now().Add(c.s.cfg.ReadTimeout))
	if err := tc.HandshakeContext(c.s.ctx); err != nil {
		c.s.m.tlsFails.Add(1)
		c.s.cfg.Logger.Debug("ledger server: TLS handshake failed", "remote", c.nc.RemoteAddr().String(), "err", err)
		return false
	}
	_ = tc.SetDeadline(time.Time{})
	return !c.stop.Load()
}

// lingerClose closes a connection whose client may still be sending (after
// an oversized or unreadable frame): it sends FIN after the error answer and
// discards input for a moment, so that closing with unread data does not
// reset the connection before the client has read the answer.
func (c *conn) lingerClose() {
	defer c.nc.Close()
	cw, ok := c.nc.(interface{ CloseWrite() error }) // *net.TCPConn, *tls.Conn
	if !ok {
		return
	}
	_ = cw.CloseWrite()
	_ = c.nc.SetReadDeadline(time.Now().Add(time.Second))
	_, _ = io.CopyN(io.Discard, c.nc, 4<<20)
}

// read runs the reader loop until EOF, an unrecoverable frame error,
// Shutdown or a dead connection.
func (c *conn) read() {
	cfg := &c.s.cfg
	br := bufio.NewReaderSize(c.nc, 4<<10)
	fr := wire.NewFrameReader(br, cfg.MaxFrame)
	fr.Buffers, fr.Cancel = c.s.frameBufs, c.quit
	defer fr.Release()
	dec := wire.NewDecoder()
	defer dec.Release()
	var req wire.Request
	var armed time.Time // when the read deadline was last set
	for {
		if c.stop.Load() {
			return
		}
		if br.Buffered() == 0 {
			// wait for the next frame under the idle timeout
			for {
				idle := cfg.IdleTimeout
				if c.scope == 0 {
					idle = cfg.ReadTimeout // the hello is due at once
				}
				_ = c.nc.SetReadDeadline(time.Now().Add(idle))
				if c.stop.Load() {
					return // checked after the set: Shutdown sets stop, then its deadline
				}
				c.readWait.Store(waitRequest)
				_, err := br.Peek(1)
				c.readWait.Store(waitNone)
				if err == nil {
					break
				}
				if unacked(err) {
					c.closeSlow()
					return
				}
				if isTimeout(err) && !c.stop.Load() && len(c.sem) > 0 {
					continue // requests in flight: the client is waiting, not idle
				}
				if isTimeout(err) && !c.stop.Load() {
					c.s.m.idleClosed.Add(1)
				}
				return
			}
			armed = time.Now()
			_ = c.nc.SetReadDeadline(armed.Add(cfg.ReadTimeout))
			if c.stop.Load() {
				return
			}
		} else if now := time.Now(); now.Sub(armed) > cfg.ReadTimeout/4 {
			// a client that streams without pause never empties the
			// buffer: keep its deadline ahead of it
			armed = now
			_ = c.nc.SetReadDeadline(now.Add(cfg.ReadTimeout))
			if c.stop.Load() {
				return // Shutdown's deadline may have been overwritten
			}
		}
		h, body, err := fr.Next()
		if err != nil {
			c.frameError(h, err)
			return
		}
		if c.scope == 0 {
			if !c.hello(h, body, dec, &req) {
				return
			}
			fr.Release()
			continue
		}
		if !c.acquire() {
			return
		}
		c.s.m.requests[h.Type].Add(1)
		c.handle(h, body, dec, &req, fr.Release)
		// Nothing refers to the batch once handled (the ledger copied the
		// ops): give large buffers back now, not at the next frame, which
		// may never come.
		dec.Release()
	}
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// frameError answers an unreadable frame if it can, before the connection
// closes.
func (c *conn) frameError(h wire.Header, err error) {
	switch {
	case errors.Is(err, wire.ErrFrameTooLarge):
		c.s.m.badFrames.Add(1)
		c.linger = true
		if c.acquire() {
			c.reply(response{id: h.ID, err: &wire.Error{Code: wire.CodeTooLarge, Message: err.Error()}})
		}
	case errors.Is(err, wire.ErrFrameTooShort):
		c.s.m.badFrames.Add(1)
		c.linger = true
		if c.acquire() {
			c.reply(response{err: &wire.Error{Code: wire.CodeMalformed, Message: err.Error()}})
		}
	case unacked(err):
		c.closeSlow()
	case errors.Is(err, io.EOF), errors.Is(err, wire.ErrCanceled), c.stop.Load():
	default:
		c.s.m.badFrames.Add(1) // truncated frame, read timeout, reset
	}
}

// closeSlow closes a connection whose client does not take its answers:
// a write blocked past WriteTimeout, or the kernel gave up on answers the
// client left unacknowledged that long (boundUnacked). The kernel cannot
// tell a client that does not read from one whose host is gone: both end
// here.
func (c *conn) closeSlow() {
	if c.slowed.CompareAndSwap(false, true) {
		c.s.m.slowClosed.Add(1)
		c.s.cfg.Logger.Warn("ledger server: closing connection that does not take its answers (not reading, or unreachable)", "remote", c.nc.RemoteAddr().String())
	}
	c.kill()
}

// acquire takes an in-flight token, waiting while the connection is at its
// bound; false if the connection died meanwhile.
func (c *conn) acquire() bool {
	select {
	case c.sem <- struct{}{}:
		return true
	default:
	}
	c.readWait.Store(waitToken)
	defer c.readWait.Store(waitNone)
	select {
	case c.sem <- struct{}{}:
		return true
	case <-c.broken:
		return false
	}
}

// reply queues an answer; the writer releases its token.
func (c *conn) reply(r response) {
	if r.err != nil {
		c.s.m.errors[min(int(r.err.Code), len(c.s.m.errors)-1)].Add(1)
	}
	c.out.push(r)
}

func (c *conn) fail(id uint64, err error) {
	c.reply(response{id: id, err: c.s.wireErr(ctxErr(err))})
}

// hello authenticates the connection from its first frame, which must be
// a TypeHello with a known token; it answers the hello itself (and false
// closes the connection). On a server without tokens every connection
// starts read_write and never gets here.
func (c *conn) hello(h wire.Header, body []byte, dec *wire.Decoder, req *wire.Request) bool {
	reason := authMissing
	if h.Type == wire.TypeHello {
		reason = authInvalid
		if err := dec.Request(h.Type, body, req); err == nil {
			c.scope = c.s.auth.Check(req.Token)
		}
		dec.Release() // the token is not kept
		if c.scope != 0 {
			if !c.acquire() {
				return false
			}
			c.reply(response{typ: wire.TypeWelcome, id: h.ID, scope: c.scope})
			return true
		}
	}
	c.s.authFailed("tcp", reason, c.nc.RemoteAddr().String(), h.Type.String())
	c.linger = true // the client may have pipelined frames after it
	if c.acquire() {
		c.reply(response{id: h.ID, err: &wire.Error{Code: wire.CodeUnauthorized,
			Message: "unauthorized: " + reason + " token; the first frame must be a hello with a token"}})
	}
	return false
}

// handle answers one request. Quick ones are answered inline; waits run in
// their own goroutine.
//
// release gives back the body's buffer; handle calls it once the body is
// decoded (the request refers to the decoder's buffers, not to the body),
// before any answer is queued, so a client that has its answer finds the
// server's frame memory returned.
func (c *conn) handle(h wire.Header, body []byte, dec *wire.Decoder, req *wire.Request, release func()) {
	l := c.s.ledger()
	err := dec.Request(h.Type, body, req)
	release()
	if err != nil {
		c.s.m.badFrames.Add(1)
		c.fail(h.ID, err)
		return
	}
	if writes(h.Type) && c.scope < ReadWrite {
		c.s.authFailed("tcp", authForbidden, c.nc.RemoteAddr().String(), h.Type.String())
		c.reply(response{id: h.ID, err: &wire.Error{Code: wire.CodeForbidden, Message: wire.ErrForbidden.Error()}})
		return
	}
	switch h.Type {
	case wire.TypeHello:
		// A connection authenticates once: a later hello (or one on a
		// server without tokens) changes nothing and answers its scope.
		c.reply(response{typ: wire.TypeWelcome, id: h.ID, scope: c.scope})
	case wire.TypePing:
		c.reply(response{typ: wire.TypePong, id: h.ID})
	case wire.TypeSubmit:
		c.submit(h.ID, req)
	case wire.TypeSubmitWait:
		if req.Level < ledger.Computed || req.Level > ledger.Snapshot {
			c.fail(h.ID, ledger.ErrLevel)
			return
		}
		// The ledger stage that brings the op to its level queues the
		// answer itself: no goroutine waits per request, and a group
		// commit readies only the connection's writer.
		id, level, start := h.ID, req.Level, time.Now()
		c.waits.Add(1)
		_, err := l.SubmitFunc(req.Op, req.Level, func(res ledger.Result, err error) {
			defer c.waits.Done()
			if err != nil {
				c.fail(id, err)
				return
			}
			c.s.m.ops.Add(1)
			c.s.m.observe(&res)
			c.s.m.observeWait(level, start)
			c.reply(response{typ: wire.TypeResultIs, id: id, res: res})
		})
		if err != nil {
			c.waits.Done()
			c.fail(id, err)
		}
	case wire.TypeWait:
		x, err := l.Indexes()
		switch {
		case err != nil:
			c.fail(h.ID, err)
		case req.Level < ledger.Computed || req.Level > ledger.Snapshot:
			c.fail(h.ID, ledger.ErrLevel)
		case req.Tx == 0 || req.Tx > x.Sequenced:
			c.fail(h.ID, ledger.ErrNotFound) // never wait for an id that may never come
		default:
			c.wait(h.ID, req.Tx, req.Level, response{typ: wire.TypeWaited, id: h.ID})
		}
	case wire.TypeBalance:
		b, err := l.Balance(req.Account)
		if err != nil {
			c.fail(h.ID, err)
			return
		}
		c.reply(response{typ: wire.TypeBalanceIs, id: h.ID, bal: b})
	case wire.TypeLookup:
		a, err := l.Lookup(req.Account)
		if err != nil {
			c.fail(h.ID, err)
			return
		}
		c.reply(response{typ: wire.TypeAccountIs, id: h.ID, acct: a})
	case wire.TypeStatus:
		lv, err := l.Status(req.Tx)
		if err != nil {
			c.fail(h.ID, err)
			return
		}
		c.reply(response{typ: wire.TypeStatusIs, id: h.ID, level: lv})
	case wire.TypeResult:
		// Result waits for the group commit of a transaction not yet
		// durable: do that off the reader goroutine.
		tx := req.Tx
		result := func() {
			res, err := l.Result(tx)
			if err != nil {
				c.fail(h.ID, err)
				return
			}
			c.reply(response{typ: wire.TypeResultIs, id: h.ID, res: res})
		}
		if lv, err := l.Status(tx); err == nil && (lv >= ledger.Committed || lv == ledger.Unknown) {
			result()
			return
		}
		c.waits.Add(1)
		c.s.workers.run(func() {
			defer c.waits.Done()
			result()
		})
	case wire.TypeIndexes:
		x, err := l.Indexes()
		if err != nil {
			c.fail(h.ID, err)
			return
		}
		c.reply(response{typ: wire.TypeIndexesAre, id: h.ID, idx: x})
	case wire.TypeSnapshot:
		// The snapshot is written and synced by the ledger's persister:
		// wait off the reader goroutine. Requests while one is in
		// flight share it (snapGate).
		c.waits.Add(1)
		c.s.workers.run(func() {
			defer c.waits.Done()
			tx, _, err := c.s.snap.do(c.s.ctx, l, c.s.ctx)
			if err != nil {
				c.fail(h.ID, err)
				return
			}
			c.reply(response{typ: wire.TypeSnapshotTaken, id: h.ID, first: tx})
		})
	default: // the reads (read.go)
		c.readIndex(h.ID, h.Type, req.Read)
	}
}

// writes reports whether requests of type t need a read_write token.
func writes(t wire.Type) bool {
	return t == wire.TypeSubmit || t == wire.TypeSubmitWait || t == wire.TypeSnapshot
}

// submit sequences a batch (atomically, contiguous ids) and answers at
// once or when its last op reached the requested level.
func (c *conn) submit(id uint64, req *wire.Request) {
	switch {
	case len(req.Ops) == 0 || len(req.Ops) > c.s.cfg.MaxBatch:
		c.fail(id, &ledger.InputError{Err: ledger.ErrBatchSize})
		return
	case req.Level > ledger.Snapshot:
		c.fail(id, ledger.ErrLevel)
		return
	}
	if req.Level <= ledger.Sequenced {
		first, last, err := c.s.ledger().SubmitBatch(req.Ops)
		if err != nil {
			c.fail(id, err)
			return
		}
		c.s.m.ops.Add(uint64(len(req.Ops)))
		c.reply(response{typ: wire.TypeSubmitted, id: id, first: first, last: last})
		return
	}
	// Waiting: the answer carries every op's result, gathered from the
	// stage deliveries; the last one queues the answer.
	b := &batchAnswer{c: c, id: id, level: req.Level, start: time.Now(), res: make([]ledger.Result, 0, len(req.Ops))}
	c.waits.Add(1)
	if _, _, err := c.s.ledger().SubmitBatchFunc(req.Ops, req.Level, b.put); err != nil {
		c.waits.Done()
		c.fail(id, err)
		return
	}
	c.s.m.ops.Add(uint64(len(req.Ops)))
}

// batchAnswer collects the per-op results of a waited batch.
type batchAnswer struct {
	c     *conn
	id    uint64
	level ledger.Level
	start time.Time
	mu    sync.Mutex
	res   []ledger.Result
	err   error
}

func (b *batchAnswer) put(r ledger.Result, err error) {
	b.mu.Lock()
	if err != nil && b.err == nil {
		b.err = err
	}
	b.res = append(b.res, r)
	done := len(b.res) == cap(b.res)
	b.mu.Unlock()
	if !done {
		return
	}
	defer b.c.waits.Done()
	if b.err != nil {
		b.c.fail(b.id, b.err)
		return
	}
	slices.SortFunc(b.res, func(x, y ledger.Result) int { return cmp.Compare(x.ID, y.ID) })
	for i := range b.res {
		b.c.s.m.observe(&b.res[i])
	}
	b.c.s.m.observeWait(b.level, b.start)
	b.c.reply(response{typ: wire.TypeSubmitted, id: b.id, first: b.res[0].ID, last: b.res[len(b.res)-1].ID, results: b.res})
}

// wait answers r once tx reached level.
func (c *conn) wait(id uint64, tx ledger.TxID, level ledger.Level, r response) {
	if lv, err := c.s.ledger().Status(tx); err == nil && lv >= level {
		c.reply(r)
		return
	}
	c.waits.Add(1)
	c.s.workers.run(func() {
		defer c.waits.Done()
		if err := c.s.ledger().Wait(c.s.ctx, tx, level); err != nil {
			c.fail(id, err)
			return
		}
		c.reply(r)
	})
}

// ctxErr maps the server's abandon context to a shutdown error.
func ctxErr(err error) error {
	if errors.Is(err, context.Canceled) {
		return wire.ErrShutdown
	}
	return err
}
