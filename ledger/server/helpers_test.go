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
	dir  string
	l    *ledger.Ledger
	s    *Server
	base ledger.TxID // the last of the transactions that created the accounts
}

// startServer opens a ledger in a temp dir, creates accounts 1 ..
// testAccounts-1 in ledger 1 with DebitsMustNotExceedCredits (so no debit
// takes one below zero), and serves it on loopback ports chosen by the
// kernel. Cleanup shuts both down.
func startServer(t testing.TB, cfg Config) *fixture { return startServerWith(t, cfg, true) }

// startServerWith is startServer, creating the accounts only if create.
func startServerWith(t testing.TB, cfg Config, create bool) *fixture {
	t.Helper()
	return startLedgerServer(t, ledger.Config{}, cfg, create)
}

// startLedgerServer is startServerWith, opening the ledger with lcfg (its
// Dir and MaxAccounts set here).
func startLedgerServer(t testing.TB, lcfg ledger.Config, cfg Config, create bool) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir()}
	lcfg.Dir, lcfg.MaxAccounts = f.dir, testAccounts
	var err error
	f.l, err = ledger.Open(lcfg)
	require.NoError(t, err)
	if create {
		f.base = createAccounts(t, f.l)
	}
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

// createAccounts creates accounts 1 .. testAccounts-1 in l and returns the
// last tx id, once they are visible.
func createAccounts(t testing.TB, l *ledger.Ledger) ledger.TxID {
	t.Helper()
	ops := make([]ledger.Op, testAccounts-1)
	for i := range ops {
		ops[i] = ledger.CreateAccount{ID: uint64(i) + 1, Ledger: 1, Flags: ledger.DebitsMustNotExceedCredits}
	}
	_, last, err := l.SubmitBatch(ops)
	require.NoError(t, err)
	require.NoError(t, l.Wait(context.Background(), last, ledger.Snapshot))
	return last
}
