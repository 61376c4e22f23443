package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
)

// ErrServerClosed is returned by Serve and Start after Shutdown.
var ErrServerClosed = errors.New("server: closed")

// Server serves one ledger. Create it with New; its methods are safe for
// concurrent use.
type Server struct {
	ledger func() *ledger.Ledger // the one New was given, or a Replica's current one
	// leaderAddr names a replica's address on the TCP protocol, for a
	// not_leader answer (NewReplica); nil for a single ledger.
	leaderAddr func(id uint64) string
	cfg        Config
	m          metrics

	ctx    context.Context // canceled when Shutdown gives up waiting
	cancel context.CancelFunc

	mu       sync.Mutex
	closing  bool
	lns      []net.Listener
	conns    map[*conn]struct{}
	httpSrv  *http.Server
	tcpAddr  net.Addr
	httpAddr net.Addr

	auth      *Authenticator     // nil: no tokens
	frameBufs *wire.FrameBuffers // large request bodies, within MaxFrameMemory
	snap      snapGate
	httpOpen  atomic.Int64 // open HTTP connections
	workers   *workers     // goroutines for requests that wait
	open      atomic.Int64 // open TCP connections
	connWG    sync.WaitGroup
	serveWG   sync.WaitGroup
	reg       *prometheus.Registry
	ready     atomic.Bool // /readyz: the ledger recovered and the server listens
}

// New returns a server for l, which the caller opens and, after Shutdown,
// closes. It validates cfg (errors wrap ErrConfig) but listens on nothing
// until Start or Serve.
func New(l *ledger.Ledger, cfg Config) (*Server, error) {
	if l == nil {
		return nil, fmt.Errorf("%w: nil ledger", ErrConfig)
	}
	return newServer(func() *ledger.Ledger { return l }, nil, cfg)
}

// Replica is a replica of a ledger cluster (ledgercluster.Node): its
// ledger changes as it starts or stops leading.
type Replica interface {
	// Ledger returns the replica's current ledger.
	Ledger() *ledger.Ledger
	// TCPAddr returns replica id's address for this server's TCP
	// protocol, "" if unknown.
	TCPAddr(id uint64) string
}

// NewReplica returns a server for a cluster replica: each request goes to
// its current ledger. On a follower, submits fail with not_leader
// (wire.CodeNotLeader, naming the leader's TCP address) and reads answer
// from the follower's state (Indexes says as of which transaction).
func NewReplica(r Replica, cfg Config) (*Server, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: nil replica", ErrConfig)
	}
	return newServer(r.Ledger, r.TCPAddr, cfg)
}

func newServer(l func() *ledger.Ledger, leaderAddr func(uint64) string, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{ledger: l, leaderAddr: leaderAddr, cfg: cfg, conns: make(map[*conn]struct{}), workers: newWorkers(),
		frameBufs: wire.NewFrameBuffers(cfg.MaxFrameMemory)}
	if s.auth, err = NewAuthenticator(cfg.Tokens); err != nil {
		return nil, err
	}
	s.reg = s.newRegistry()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// wireErr is the wire error for err; a not_leader names the leader's
// address on the TCP protocol.
func (s *Server) wireErr(err error) *wire.Error {
	we := wire.AsError(err)
	var nl *ledger.NotLeaderError
	if we.Code == wire.CodeNotLeader && errors.As(err, &nl) {
		we.Message = ""
		if s.leaderAddr != nil && nl.LeaderID != 0 {
			we.Message = s.leaderAddr(nl.LeaderID)
		}
	}
	return we
}

// Start listens on Config.Addr and Config.HTTPAddr and serves both in the
// background until Shutdown. Addr and HTTPAddr report the bound addresses.
func (s *Server) Start() error {
	if s.isClosing() {
		return ErrServerClosed
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: listen %s: %w", s.cfg.Addr, err)
	}
	var hln net.Listener
	if s.cfg.HTTPAddr != "off" {
		if hln, err = net.Listen("tcp", s.cfg.HTTPAddr); err != nil {
			ln.Close()
			return fmt.Errorf("server: listen http %s: %w", s.cfg.HTTPAddr, err)
		}
	}
	if err := s.track(ln); err != nil {
		ln.Close()
		if hln != nil {
			hln.Close()
		}
		return err
	}
	s.mu.Lock()
	s.tcpAddr = ln.Addr()
	s.mu.Unlock()
	s.serveWG.Add(1)
	go func() {
		defer s.serveWG.Done()
		_ = s.serve(ln)
	}()
	if hln != nil {
		if err := s.startHTTP(hln); err != nil {
			hln.Close()
			return err
		}
	}
	// Open recovered the ledger before New; from here both listeners
	// serve it.
	s.ready.Store(true)
	return nil
}

func (s *Server) startHTTP(ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.ReadTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		// A copy: ServeTLS adds HTTP/2 to its config's NextProtos, which
		// must not race the msgpack listener's handshakes on the caller's
		// config (nor change it).
		TLSConfig: s.cfg.TLS.Clone(),
		ErrorLog:  slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.httpSrv, s.httpAddr = hs, ln.Addr()
	s.mu.Unlock()
	s.serveWG.Add(1)
	go func() {
		defer s.serveWG.Done()
		lln := &limitListener{Listener: ln, s: s}
		if s.cfg.TLS != nil {
			_ = hs.ServeTLS(lln, "", "")
		} else {
			_ = hs.Serve(lln)
		}
	}()
	return nil
}

// Addr returns the bound TCP address once Start or Serve has listened, or nil.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tcpAddr
}

// HTTPAddr returns the bound HTTP address once Start has listened, or nil.
func (s *Server) HTTPAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.httpAddr
}

// Serve accepts binary-protocol connections on ln until Shutdown, then
// returns ErrServerClosed; any other accept error is returned at once.
// Serve closes ln.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.track(ln); err != nil {
		ln.Close()
		return err
	}
	s.mu.Lock()
	if s.tcpAddr == nil {
		s.tcpAddr = ln.Addr()
	}
	s.mu.Unlock()
	s.ready.Store(true)
	return s.serve(ln)
}

func (s *Server) track(ln net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return ErrServerClosed
	}
	s.lns = append(s.lns, ln)
	return nil
}

func (s *Server) serve(ln net.Listener) error {
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosing() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay) // accept backoff (e.g. out of file descriptors)
				continue
			}
			return err
		}
		delay = 0
		s.accept(nc)
	}
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

func (s *Server) accept(nc net.Conn) {
	s.m.accepted.Add(1)
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		// a client that does not read is closed once its answers wait
		// WriteTimeout, even while they fit in the kernel's buffers
		if err := boundUnacked(tc, s.cfg.WriteTimeout); err != nil {
			s.cfg.Logger.Debug("ledger server: TCP_USER_TIMEOUT not set", "remote", nc.RemoteAddr().String(), "err", err)
		}
	}
	if s.open.Add(1) > int64(s.cfg.MaxConns) {
		s.open.Add(-1)
		s.m.rejected.Add(1)
		s.refuse(nc, &wire.Error{Code: wire.CodeBusy, Message: "too many connections"})
		return
	}
	raw := nc
	if s.cfg.TLS != nil {
		nc = tls.Server(nc, s.cfg.TLS) // the handshake runs on the connection's goroutine
	}
	c := newConn(s, nc)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.open.Add(-1)
		s.refuse(raw, &wire.Error{Code: wire.CodeShutdown, Message: "server shutting down"})
		return
	}
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	s.mu.Unlock()
	go c.serve()
}

// refuse writes one error frame (best effort, bounded by WriteTimeout) and
// closes nc.
//
// A connection refused before its TLS handshake is closed without the
// frame: written in the clear, it would read as a broken handshake anyway,
// and a handshake would tie up the accept loop.
func (s *Server) refuse(nc net.Conn, we *wire.Error) {
	if _, ok := nc.(*tls.Conn); s.cfg.TLS != nil && !ok {
		_ = nc.Close()
		return
	}
	e := wire.NewEncoder()
	e.Error(0, we)
	_ = nc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	_, _ = nc.Write(e.Bytes())
	_ = nc.Close()
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.open.Add(-1)
	s.connWG.Done()
}

// Shutdown stops accepting connections, stops reading requests, answers
// every request already read, and closes every connection; the HTTP
// listener finishes its in-flight requests the same way. If ctx ends
// first, Shutdown abandons the remaining waits, closes the connections
// at once and returns ctx's error. The ledger stays open: close it after
// Shutdown returns. Shutdown is idempotent.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	first := !s.closing
	s.closing = true
	lns := s.lns
	s.lns = nil
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	hs := s.httpSrv
	s.mu.Unlock()
	for _, ln := range lns {
		_ = ln.Close()
	}
	for _, c := range conns {
		c.stopReading()
	}
	var herr error
	httpDone := make(chan struct{})
	go func() {
		defer close(httpDone)
		if hs != nil {
			herr = hs.Shutdown(ctx)
		}
	}()
	done := make(chan struct{})
	go func() {
		s.connWG.Wait()
		s.serveWG.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.cancel()
		s.mu.Lock()
		for c := range s.conns {
			c.kill()
		}
		s.mu.Unlock()
		if hs != nil {
			_ = hs.Close()
		}
		<-done
	}
	<-httpDone
	s.cancel()
	s.snap.wg.Wait() // an HTTP caller may have left its snapshot running
	if first {
		s.workers.stop() // every connection is done: no more work
	}
	if err == nil && herr != nil && !errors.Is(herr, http.ErrServerClosed) {
		err = herr
	}
	return err
}
