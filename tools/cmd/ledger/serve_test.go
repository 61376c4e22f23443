package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/client"
)

var servingLine = regexp.MustCompile(`on tcp (\S+), http (\S+)`)

// TestServeThroughAppRun runs `ledger serve` in process; canceling the
// context plays the part of the signal.
// startServe runs `ledger serve` on dir in this process, on loopback ports,
// with extra flags, and returns its outputs, the serving line's submatches
// (TCP address, HTTP URL) and a function that stops it and returns its error.
func startServe(t *testing.T, dir string, extra ...string) (out, errb *syncBuffer, m []string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errb = new(syncBuffer), new(syncBuffer)
	done := make(chan error, 1)
	args := append([]string{"ledger", "serve", "--dir", dir,
		"--addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--max-accounts", "1000"}, extra...)
	go func() { done <- newApp(out, errb).RunContext(ctx, args) }()
	stop = func() error { cancel(); return <-done }
	if !assert.Eventually(t, func() bool {
		m = servingLine.FindStringSubmatch(out.String())
		return m != nil
	}, 20*time.Second, 5*time.Millisecond, "serve never printed its addresses: %s", errb.String()) {
		_ = stop()
		t.FailNow()
	}
	return out, errb, m, stop
}

func TestServeLowLatencyWarns(t *testing.T) {
	_, errb, _, stop := startServe(t, t.TempDir(), "--wait-strategy", "low-latency")
	require.NoError(t, stop())
	assert.Contains(t, errb.String(), "level=WARN")
	assert.Contains(t, errb.String(), "low-latency keeps every stage polling")

	_, errb, _, stop = startServe(t, t.TempDir())
	require.NoError(t, stop())
	assert.NotContains(t, errb.String(), "level=WARN", "balanced starts without a warning")
}

func TestServeThroughAppRun(t *testing.T) {
	dir := t.TempDir()
	out, _, m, stop := startServe(t, dir)
	so, se, code := runApp(t, "deposit", "--addr", m[1], "7", "70")
	require.Equal(t, 0, code, se)
	require.Contains(t, so, "account 7 +70 = 70")
	_, se, code = runApp(t, "verify", "--dir", dir)
	require.Equal(t, 1, code, "verify of a directory the server has open")
	require.Contains(t, se, "in use by an open ledger")
	resp, err := http.Get(m[2] + "/v1/accounts/7/balance?")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var bal struct{ Balance int64 }
	require.NoError(t, json.Unmarshal(body, &bal))
	require.NoError(t, stop())
	require.Contains(t, out.String(), "stopped cleanly")
	// the directory reopens with the deposit in it
	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 1000})
	require.NoError(t, err)
	b, err := l.Balance(7)
	require.NoError(t, err)
	assert.Equal(t, int64(70), b)
	require.NoError(t, l.Close())
}

func TestServeBadAddress(t *testing.T) {
	_, stderr, code := runApp(t, "serve", "--dir", t.TempDir(), "--max-accounts", "100", "--addr", "256.0.0.1:99999")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "listen")
}

// buildBinary compiles the command into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ledger")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

// TestSIGTERMDuringLoad runs the real binary, loads it from several
// clients, sends SIGTERM mid-load, and checks that the process exits 0 and
// that every acknowledged transaction is in the reopened ledger with the
// outcome the client was told.
func TestSIGTERMDuringLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "serve", "--dir", dir, "--addr", "127.0.0.1:0", "--http-addr", "off", "--max-accounts", "1000")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "no output from serve")
	m := regexp.MustCompile(`on tcp (\S+),`).FindStringSubmatch(lines.Text())
	require.NotNil(t, m, lines.Text())
	rest := make(chan string, 1)
	go func() {
		var all string
		for lines.Scan() {
			all += lines.Text() + "\n"
		}
		rest <- all
	}()

	ctx := context.Background()
	c, err := client.Dial(ctx, m[1], client.WithConns(4))
	require.NoError(t, err)
	defer c.Close()
	var mu sync.Mutex
	acked := map[ledger.TxID]ledger.Result{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				op := ledger.Op(ledger.Deposit{Account: uint64(1 + g), Amount: uint64(1 + i%7)})
				if i%3 == 0 {
					op = ledger.Transfer{From: uint64(1 + g), To: uint64(100 + g), Amount: 2}
				}
				if i%5 == 0 { // batches, acknowledged as a whole
					first, last, err := c.SubmitBatch(ctx, []ledger.Op{op, ledger.Deposit{Account: 500, Amount: 1}}, ledger.Committed)
					if err != nil {
						return
					}
					mu.Lock()
					acked[first] = ledger.Result{ID: first}
					acked[last] = ledger.Result{ID: last}
					mu.Unlock()
					continue
				}
				res, err := c.SubmitAndWait(ctx, op, ledger.Committed)
				if err != nil {
					return // the server is going away: unacknowledged
				}
				mu.Lock()
				acked[res.ID] = res
				mu.Unlock()
			}
		})
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 2000
	}, 60*time.Second, time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	wg.Wait()
	require.NoError(t, cmd.Wait(), "exit status 0")
	assert.Contains(t, <-rest, "stopped cleanly")

	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 1000})
	require.NoError(t, err)
	defer l.Close()
	x, err := l.Indexes()
	require.NoError(t, err)
	for id, want := range acked {
		require.LessOrEqual(t, id, x.Committed, "acknowledged tx %d lost", id)
		got, err := l.Result(id)
		require.NoError(t, err)
		if want.Kind != 0 {
			require.Equal(t, want.Kind, got.Kind, "tx %d", id)
			require.Equal(t, want.Fail, got.Fail, "tx %d", id)
			require.Equal(t, want.Entries, got.Entries, "tx %d", id)
		}
	}
	t.Logf("%d acknowledged transactions survived SIGTERM (committed %d)", len(acked), x.Committed)
}
