package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a bytes.Buffer safe for a concurrent writer and reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runApp runs the CLI with args through App.Run and returns its stdout,
// stderr and exit status.
func runApp(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runAppContext(context.Background(), args...)
}

// ttyBuffer is a syncBuffer that says it is a terminal, so progress draws.
type ttyBuffer struct{ syncBuffer }

func (*ttyBuffer) IsTerminal() bool { return true }

// runAppTTY is runAppContext with a terminal for stderr.
func runAppTTY(ctx context.Context, args ...string) (string, string, int) {
	var out syncBuffer
	var errb ttyBuffer
	err := newApp(&out, &errb).RunContext(ctx, append([]string{"ledger"}, args...))
	if err != nil {
		errb.Write([]byte("ledger: " + err.Error() + "\n"))
	}
	return out.String(), errb.String(), exitcode.Of(err)
}

func runAppContext(ctx context.Context, args ...string) (string, string, int) {
	var out, errb syncBuffer
	err := newApp(&out, &errb).RunContext(ctx, append([]string{"ledger"}, args...))
	if err != nil {
		errb.Write([]byte("ledger: " + err.Error() + "\n"))
	}
	return out.String(), errb.String(), exitcode.Of(err)
}

// startServer serves a fresh ledger on loopback and returns its address.
func startServer(t *testing.T) string {
	t.Helper()
	addr, _ := startServerIn(t, t.TempDir())
	return addr
}

// startServerIn serves a ledger in dir on loopback. stop shuts the server
// down and closes the ledger; it runs at cleanup if the test did not call
// it.
func startServerIn(t *testing.T, dir string) (addr string, stop func()) {
	t.Helper()
	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 1000})
	require.NoError(t, err)
	s, err := server.New(l, server.Config{Addr: "127.0.0.1:0", HTTPAddr: "off", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, s.Shutdown(ctx))
			require.NoError(t, l.Close())
		})
	}
	t.Cleanup(stop)
	return s.Addr().String(), stop
}

func TestHelp(t *testing.T) {
	out, _, code := runApp(t, "--help")
	require.Equal(t, 0, code)
	for _, cmd := range []string{"serve", "account", "deposit", "withdraw", "transfer", "balance", "tx", "indexes", "snapshot", "bench"} {
		require.Contains(t, out, cmd)
		out, _, code := runApp(t, cmd, "--help")
		require.Equal(t, 0, code, cmd)
		require.Contains(t, out, "USAGE", cmd)
	}
	out, _, _ = runApp(t, "serve", "--help")
	require.Contains(t, out, "LEDGER_DIR")
	require.Contains(t, out, "LEDGER_ADDR")
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"deposit", "1"},
		{"deposit", "x", "5"},
		{"transfer", "1", "2"},
		{"balance"},
		{"tx", "-1"},
		{"deposit", "--wait", "forever", "1", "2"},
		{"balance", "--no-such-flag", "1"},
		{"frobnicate"},
		{"bench", "--batch", "0"},
		{"serve", "--wait-strategy", "fast"},
		{"snapshot", "now"},
		{"transfer", "--post", "0"},
		{"transfer", "--post", "3", "--void", "3"},
		{"transfer", "--pending-timeout", "5", "1", "2", "3"},
		{"transfer", "--closing-debit", "1", "2", "3"},
		{"transfer", "--linked", "1", "2", "3"},
		{"transfer", "--void", "3", "4"},
		{"transfer", "--post", "3", "--pending"},
		{"transfer", "--code", "70000", "1", "2", "3"},
	} {
		_, stderr, code := runApp(t, args...)
		require.Equal(t, 2, code, "%v: %s", args, stderr)
		require.NotEmpty(t, stderr, args)
	}
	// Configuration out of range, for the ledger or for the server.
	for _, flag := range [][]string{{"--max-conns", "-1"}, {"--max-accounts", "1099511627776"}} {
		args := append([]string{"serve", "--dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "off"}, flag...)
		_, stderr, code := runApp(t, args...)
		require.Equal(t, 2, code, "%v: %s", flag, stderr)
		require.Contains(t, stderr, "invalid config", flag)
	}
	// A negative id reaches the flag parser first; the message is about
	// the argument, not about an unknown flag.
	_, stderr, code := runApp(t, "deposit", "-3", "5")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, `"-3" is not a non-negative integer`)
}

func TestCommandsAgainstServer(t *testing.T) {
	addr := startServer(t)
	run := func(args ...string) (string, string, int) {
		n := 1
		if args[0] == "account" { // flags follow the subcommand
			n = 2
		}
		return runApp(t, append(append(append([]string{}, args[:n]...), "--addr", addr), args[n:]...)...)
	}
	var out string
	_, stderr, code := run("deposit", "1", "100")
	require.Equal(t, 1, code)
	require.Equal(t, "ledger: tx 1: account_not_found\n", stderr, "accounts are created first")
	for _, id := range []string{"1", "2", "3"} {
		out, stderr, code = run("account", "create", "--ledger", "1", "--flags", "debits_must_not_exceed_credits", id)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, out, "create_account committed: account "+id+" ledger 1 code 0 flags debits_must_not_exceed_credits")
	}
	_, stderr, code = run("account", "create", "--ledger", "2", "3")
	require.Equal(t, 1, code)
	require.Equal(t, "ledger: tx 5: exists_with_different_flags\n", stderr)
	_, stderr, code = run("account", "create", "4")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--ledger is required")
	_, stderr, code = run("account", "create", "--ledger", "1", "--flags", "closd", "4")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, `unknown flag "closd"`)

	out, stderr, code = run("deposit", "1", "100")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "tx 6 deposit committed")
	require.Contains(t, out, "account 1 credits_posted +100 = 100")
	out, stderr, code = run("transfer", "--wait", "snapshot", "1", "2", "30")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "account 2 credits_posted +30 = 30")
	out, _, code = run("balance", "2")
	require.Equal(t, 0, code)
	require.Equal(t, "30\n", out)
	out, _, code = run("account", "lookup", "1")
	require.Equal(t, 0, code)
	require.Equal(t, "account 1 ledger 1 code 0 flags debits_must_not_exceed_credits user_data 0,0\n"+
		"debits_posted 30 credits_posted 100 debits_pending 0 credits_pending 0 balance 70\n", out)

	_, stderr, code = run("withdraw", "2", "31")
	require.Equal(t, 1, code)
	require.Equal(t, "ledger: tx 8: exceeds_credits\n", stderr, "one clear line")

	_, _, code = run("deposit", "--ref", "42", "3", "5")
	require.Equal(t, 0, code)
	out, stderr, code = run("deposit", "--ref", "42", "3", "5")
	require.Equal(t, 0, code, "an idempotent retry that finds its transaction applied succeeded: %s", stderr)
	require.Equal(t, "already applied as tx 9 (this retry is tx 10)\n", out)

	out, _, code = run("tx", "7")
	require.Equal(t, 0, code)
	require.Contains(t, out, "tx 7: ")
	require.Contains(t, out, "kind: transfer")
	require.Contains(t, out, "entry: account 1 debits_posted +30 = 30")

	_, stderr, code = run("tx", "999")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "not found")

	out, _, code = run("indexes")
	require.Equal(t, 0, code)
	require.Contains(t, out, "sequenced 10")

	// A flag after the arguments: say to put flags first, with the command.
	_, stderr, code = run("transfer", "1", "2", "30", "--wait", "snapshot")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "flag --wait after the arguments; flags go first: ledger transfer --wait snapshot 1 2 30")

	_, stderr, code = run("balance", "5000")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "account 5000: ledger: account not found")
	require.Equal(t, 1, strings.Count(stderr, "\n"))
	_, stderr, code = run("account", "lookup", "5000")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "account not found")
}

// TestTransferFlagsAgainstServer: a hold, a partial post, a void, an
// expiry is not waited for here (the library's tests do), a linked chain
// that fails whole, and the usage errors name their flag.
func TestTransferFlagsAgainstServer(t *testing.T) {
	addr := startServer(t)
	run := func(args ...string) (string, string, int) {
		n := 1
		if args[0] == "account" {
			n = 2
		}
		return runApp(t, append(append(append([]string{}, args[:n]...), "--addr", addr), args[n:]...)...)
	}
	for _, id := range []string{"1", "2"} {
		_, stderr, code := run("account", "create", "--ledger", "840", "--flags", "debits_must_not_exceed_credits", id)
		require.Equal(t, 0, code, stderr)
	}
	_, stderr, code := run("deposit", "1", "100")
	require.Equal(t, 0, code, stderr)
	out, stderr, code := run("transfer", "--pending", "--pending-timeout", "3600", "--code", "7", "--user-data", "99", "1", "2", "60")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "tx 4 transfer committed: ledger 840 code 7 user_data 99 flags pending timeout 3600s;")
	require.Contains(t, out, "account 1 debits_pending +60 = 60;")
	_, stderr, code = run("transfer", "1", "2", "41") // 60 held + 41 > 100
	require.Equal(t, 1, code)
	require.Equal(t, "ledger: tx 5: exceeds_credits\n", stderr)
	out, stderr, code = run("transfer", "--post", "4", "45")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "flags post_pending_transfer pending_id 4;")
	require.Contains(t, out, "account 1 debits_pending -60 = 0;")
	require.Contains(t, out, "account 1 debits_posted +45 = 45;")
	_, stderr, code = run("transfer", "--void", "4")
	require.Equal(t, 1, code)
	require.Equal(t, "ledger: tx 7: pending_transfer_already_posted\n", stderr)
	out, stderr, code = run("transfer", "--json", "--linked", "1", "2", "10", "2", "1", "1000")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "chain failed: tx 9: exceeds_credits")
	require.Contains(t, out, `"fail": "linked_event_failed"`)
	out, _, code = run("account", "lookup", "1")
	require.Equal(t, 0, code)
	require.Contains(t, out, "debits_posted 45 credits_posted 100 debits_pending 0")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"transfer", "--post", "0"}, "--post: ID must be the pending transfer's transaction id"},
		{[]string{"transfer", "--post", "3", "--void", "3"}, "--post and --void exclude each other"},
		{[]string{"transfer", "--pending-timeout", "5", "1", "2", "3"}, "--pending-timeout needs --pending"},
		{[]string{"transfer", "--closing-credit", "1", "2", "3"}, "--closing-debit and --closing-credit need --pending"},
		{[]string{"transfer", "--linked", "1", "2", "3"}, "--linked: want two or more FROM TO AMOUNT triples"},
		{[]string{"transfer", "--void", "3", "4"}, "--void ID: want no arguments"},
		{[]string{"transfer", "--ledger", "4294967296", "1", "2", "3"}, "--ledger 4294967296 out of range"},
	} {
		_, stderr, code := run(c.args...)
		require.Equal(t, 2, code, "%v: %s", c.args, stderr)
		require.Contains(t, stderr, c.want, c.args)
	}
}

// TestSnapshotCommand: `ledger snapshot` makes a running server write a
// snapshot covering everything committed and prints its tx id; the
// directory then holds it (verify, after the server stopped).
func TestSnapshotCommand(t *testing.T) {
	dir := t.TempDir()
	addr, stop := startServerIn(t, dir)
	run := func(args ...string) (string, string, int) {
		n := 1
		if args[0] == "account" { // flags follow the subcommand
			n = 2
		}
		return runApp(t, append(append(append([]string{}, args[:n]...), "--addr", addr), args[n:]...)...)
	}
	out, stderr, code := run("snapshot")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "snapshot at tx 0\n", out, "nothing committed yet")
	_, stderr, code = run("account", "create", "--ledger", "1", "1")
	require.Equal(t, 0, code, stderr)
	for range 2 {
		_, stderr, code = run("deposit", "--wait", "committed", "1", "10")
		require.Equal(t, 0, code, stderr)
	}
	out, stderr, code = run("snapshot")
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "snapshot at tx 3\n", out)
	out, _, code = run("snapshot")
	require.Equal(t, 0, code)
	require.Equal(t, "snapshot at tx 3\n", out, "already covered")
	stop()
	out, stderr, code = runApp(t, "verify", "--dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "snapshot at tx 3: valid=true replayed=true")

	_, stderr, code = runApp(t, "snapshot", "--addr", addr, "--timeout", "2s")
	require.Equal(t, 1, code, "server gone")
	require.Contains(t, stderr, "dial")
	require.Equal(t, 1, strings.Count(stderr, "\n"))
}

func TestServerUnreachable(t *testing.T) {
	_, stderr, code := runApp(t, "balance", "--addr", "127.0.0.1:1", "--timeout", "2s", "1")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "dial")
	require.Equal(t, 1, strings.Count(stderr, "\n"))
}
