package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/lanework/lanework/ledger/wire"
)

// Defaults for the zero fields of Config. Both listeners default to
// loopback: exposing the ledger takes an explicit address.
const (
	DefaultAddr         = "127.0.0.1:7070"
	DefaultHTTPAddr     = "127.0.0.1:7071"
	DefaultMaxConns     = 4096
	DefaultMaxHTTPConns = 256
	// DefaultMaxFrameMemory bounds the bytes of large request bodies
	// being read or handled at once, over all connections.
	DefaultMaxFrameMemory = 64 << 20
	DefaultMaxInFlight    = 1024
	DefaultMaxBatch       = 8192
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultReadTimeout    = 10 * time.Second
	DefaultWriteTimeout   = 10 * time.Second
)

// ErrConfig is wrapped by every configuration error from New.
var ErrConfig = errors.New("server: invalid config")

// ErrExposed is wrapped by the error of New for a listener on an address
// other than loopback without both Tokens and TLS (and without Insecure).
var ErrExposed = fmt.Errorf("%w: listening beyond loopback needs tokens and TLS", ErrConfig)

// Config configures a Server. The zero value of every field selects its
// documented default.
type Config struct {
	// Addr is the TCP address of the binary protocol; default
	// 127.0.0.1:7070. Port 0 picks a free port (see Server.Addr).
	Addr string
	// HTTPAddr is the address of the HTTP/JSON API and /metrics; default
	// 127.0.0.1:7071. "off" disables it.
	HTTPAddr string
	// MaxFrame bounds the length of a request frame and of an HTTP request
	// body, in bytes; default wire.DefaultMaxFrame (4 MiB). A larger frame
	// is answered with CodeTooLarge and its connection closed.
	MaxFrame int
	// MaxConns bounds open TCP connections; default 4096. A connection
	// beyond it gets one CodeBusy error frame and is closed.
	MaxConns int
	// MaxHTTPConns bounds open HTTP connections; default 256. A connection
	// beyond it is answered 503 (plain HTTP) or closed (TLS) at once.
	MaxHTTPConns int
	// MaxFrameMemory bounds the memory of request bodies above
	// wire.SmallFrame (4 KiB) read or being handled at once, over all
	// connections; default 64 MiB. A connection whose frame does not fit
	// waits (in arrival order) for others to finish theirs. Each
	// connection keeps only SmallFrame bytes between frames.
	MaxFrameMemory int64
	// MaxInFlight bounds the requests of one connection read but not yet
	// answered; default 1024. At the bound the server stops reading that
	// connection until answers leave.
	MaxInFlight int
	// MaxBatch bounds the ops of one submit; default 8192. It must not be
	// above the ledger's ring size (ledger.Config.RingSize), or large
	// batches fail with ledger.ErrBatchSize.
	MaxBatch int
	// IdleTimeout closes a connection that has no request in flight and
	// sends nothing for this long; default 5 minutes.
	IdleTimeout time.Duration
	// ReadTimeout bounds how long the rest of a frame may take once its
	// first byte arrived (and an HTTP request's headers); default 10 s.
	ReadTimeout time.Duration
	// WriteTimeout closes a connection whose response write blocks this
	// long (a client that does not read); default 10 s. On Linux it also
	// bounds how long responses already in the kernel's send buffer may
	// stay unacknowledged (TCP_USER_TIMEOUT): such a buffer holds up to
	// megabytes, so a write may not block for a long time.
	WriteTimeout time.Duration
	// Tokens, if any, are the bearer tokens the server accepts: every HTTP
	// request but /healthz and /readyz must carry one ("Authorization:
	// Bearer SECRET"), and every TCP connection must send a hello with one
	// as its first frame. None: no authentication.
	Tokens []Token
	// TLS, if set, serves both listeners over TLS with this configuration
	// (certificates, and ClientAuth and ClientCAs for mutual TLS); nil
	// serves plain TCP and HTTP.
	TLS *tls.Config
	// Insecure allows listening on non-loopback addresses without Tokens
	// or TLS; New logs a warning. Without it such a Config is refused with
	// ErrExposed: anyone who can reach the port could move money.
	Insecure bool
	// Pprof serves net/http/pprof's profiles under /debug/pprof/ on the
	// HTTP listener (behind a read_write token when there are tokens).
	Pprof bool
	// Logger receives connection-level events; default slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.MaxFrame == 0 {
		c.MaxFrame = wire.DefaultMaxFrame
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.MaxHTTPConns == 0 {
		c.MaxHTTPConns = DefaultMaxHTTPConns
	}
	if c.MaxFrameMemory == 0 {
		c.MaxFrameMemory = DefaultMaxFrameMemory
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	bad := func(f string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: "+f, append([]any{ErrConfig}, args...)...)
	}
	switch {
	case c.MaxFrame < wire.MinFrame+16:
		return bad("MaxFrame %d too small", c.MaxFrame)
	case c.MaxConns < 1:
		return bad("MaxConns %d below 1", c.MaxConns)
	case c.MaxHTTPConns < 1:
		return bad("MaxHTTPConns %d below 1", c.MaxHTTPConns)
	case c.MaxFrameMemory < int64(c.MaxFrame):
		return bad("MaxFrameMemory %d below MaxFrame %d", c.MaxFrameMemory, c.MaxFrame)
	case c.MaxInFlight < 1:
		return bad("MaxInFlight %d below 1", c.MaxInFlight)
	case c.MaxBatch < 1 || c.MaxBatch > wire.MaxOps:
		return bad("MaxBatch %d out of range [1, %d]", c.MaxBatch, wire.MaxOps)
	case c.IdleTimeout < 0 || c.ReadTimeout < 0 || c.WriteTimeout < 0:
		return bad("negative timeout")
	}
	for _, a := range []string{c.Addr, c.HTTPAddr} {
		if a == "off" || loopback(a) || (len(c.Tokens) > 0 && c.TLS != nil) {
			continue
		}
		if !c.Insecure {
			return c, fmt.Errorf("%w: %s (tokens: %d, TLS: %v)", ErrExposed, a, len(c.Tokens), c.TLS != nil)
		}
		c.Logger.Warn("ledger server: INSECURE: listening beyond loopback without tokens and TLS", "addr", a,
			"tokens", len(c.Tokens), "tls", c.TLS != nil)
	}
	return c, nil
}

// loopback reports whether addr (host:port) can be reached only from this
// machine: "localhost" or a loopback IP. An empty host, 0.0.0.0, :: and
// any other name listen beyond it.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
