package client

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/lanework/lanework/ledger/wire"
)

// Option configures Dial.
type Option func(*options)

type options struct {
	conns    int
	timeout  time.Duration
	maxFrame int
	// writeTimeout bounds each write to the connection
	writeTimeout time.Duration
	dial         func(ctx context.Context, network, addr string) (net.Conn, error)
	token        string
	tls          *tls.Config
	cluster      []string // WithCluster: every replica's address
	backoff      time.Duration
}

func defaultOptions() options {
	var d net.Dialer
	return options{conns: 2, timeout: 5 * time.Second, maxFrame: wire.DefaultMaxFrame,
		writeTimeout: DefaultWriteTimeout, dial: d.DialContext, backoff: 10 * time.Millisecond}
}

// WithConns sets the number of pooled connections (default 2, at least 1).
// Calls are spread over them round robin.
func WithConns(n int) Option {
	return func(o *options) { o.conns = max(n, 1) }
}

// WithDialTimeout bounds each connection attempt (default 5 s), on top of
// the context passed to Dial or to the call that reconnects.
func WithDialTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// DefaultWriteTimeout is the default of WithWriteTimeout.
const DefaultWriteTimeout = 10 * time.Second

// WithWriteTimeout bounds every write of requests to a connection (default
// DefaultWriteTimeout); a call's ctx deadline, if earlier, bounds the write
// that carries its request. A write that does not finish in time (a server
// that stopped reading) closes the connection: the calls in flight on it
// fail with an error matching ErrConnLost, and the next call dials a new
// one. d <= 0 leaves only ctx deadlines, so a call without one may block in
// a write for as long as the peer does not read.
func WithWriteTimeout(d time.Duration) Option {
	return func(o *options) { o.writeTimeout = max(d, 0) }
}

// WithMaxFrame bounds the length of a response frame the client accepts
// (default wire.DefaultMaxFrame).
func WithMaxFrame(n int) Option {
	return func(o *options) { o.maxFrame = n }
}

// WithDialer replaces the function that opens connections (default a
// net.Dialer); tests use it to inject faults.
func WithDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) Option {
	return func(o *options) { o.dial = dial }
}

// WithToken makes every connection authenticate with the bearer token
// secret (a hello frame, answered before Dial or the reconnecting call
// goes on). A refused token fails them with an error matching
// wire.ErrUnauthorized.
func WithToken(secret string) Option {
	return func(o *options) { o.token = secret }
}

// WithTLS speaks TLS with cfg on every connection. The server's
// certificate is verified against cfg.RootCAs (nil: the system roots) for
// the host of the address, unless cfg.ServerName says otherwise; set
// cfg.Certificates for a server that requires client certificates.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) { o.tls = cfg }
}

// WithCluster makes the client follow a cluster's leader (servers started
// with server.NewReplica): addrs are the replicas' TCP addresses (the one
// passed to Dial among them or not). A submit answered not_leader goes to
// the leader named, or the next replica when none is; one that could not
// be sent (no connection) goes to the next replica; both are retried, as
// they never executed. A submit whose outcome is unknown (the connection
// lost, or the replica stopped leading after it took it) is retried with
// the same ops only if every op has a UserRef: the leader's idempotency
// index then answers the retry as a duplicate of the original if it
// executed (exactly once); without one it returns the error. Retries go
// on until ctx ends, with backoff between replicas. Reads are answered by
// whichever replica the client is connected to (a follower's state; see
// Indexes).
func WithCluster(addrs ...string) Option {
	return func(o *options) { o.cluster = append([]string(nil), addrs...) }
}
