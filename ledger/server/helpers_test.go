package server

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/client"
	"github.com/stretchr/testify/require"
)

const testAccounts = 1000

type fixture struct {
	dir string
	l   *ledger.Ledger
	s   *Server
}

// startServer opens a ledger in a temp dir and serves it on loopback ports
// chosen by the kernel. Cleanup shuts both down.
func startServer(t testing.TB, cfg Config) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir()}
	var err error
	f.l, err = ledger.Open(ledger.Config{Dir: f.dir, MaxAccounts: testAccounts})
	require.NoError(t, err)
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	f.s, err = New(f.l, cfg)
	require.NoError(t, err)
	require.NoError(t, f.s.Start())
	t.Cleanup(func() { f.stop(t) })
	return f
}

func (f *fixture) stop(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, f.s.Shutdown(ctx))
	require.NoError(t, f.l.Close())
}

func (f *fixture) dial(t testing.TB, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.Dial(context.Background(), f.s.Addr().String(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func (f *fixture) raw(t testing.TB) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", f.s.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return nc
}

func (f *fixture) httpURL() string { return "http://" + f.s.HTTPAddr().String() }
