package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/ledger/client"
	"github.com/lanework/lanework/tools/internal/interrupt"
)

func TestBenchRemoteJSON(t *testing.T) {
	addr := startServer(t)
	out, stderr, code := runApp(t, "bench", "--addr", addr, "--duration", "1s", "--batch", "64",
		"--submitters", "2", "--accounts", "1000", "--json")
	require.Equal(t, 0, code, stderr)
	var rep benchReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Positive(t, rep.Ops)
	assert.Positive(t, rep.Throughput)
	assert.Positive(t, rep.CommitP99)
	assert.Zero(t, rep.FailedCalls)
	assert.Positive(t, rep.Calls)
	assert.Zero(t, rep.Rate, "saturation: no offered rate")
	assert.NotContains(t, out, "offered_tx_per_second")
	assert.Empty(t, stderr, "no progress where stderr is not a terminal")
}

// TestBenchRemoteFailedCalls: calls that fail (the server goes away mid-run)
// make bench exit 1 and say how many, after the report.
func TestBenchRemoteFailedCalls(t *testing.T) {
	addr, stop := startServerIn(t, t.TempDir())
	res := make(chan [3]any, 1)
	go func() {
		out, stderr, code := runAppContext(context.Background(), "bench", "--addr", addr, "--duration", "2s",
			"--batch", "16", "--accounts", "1000")
		res <- [3]any{out, stderr, code}
	}()
	// Stop the server once the bench has had calls succeed.
	cl, err := client.Dial(context.Background(), addr)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		x, err := cl.Indexes(context.Background())
		return err == nil && x.Committed > 999+16 // the 999 accounts, then ops of the run
	}, 20*time.Second, 10*time.Millisecond)
	cl.Close()
	stop()
	r := <-res
	out, stderr, code := r[0].(string), r[1].(string), r[2].(int)
	require.Equal(t, 1, code, stderr)
	assert.Contains(t, out, "failed calls", "the report still prints")
	assert.Regexp(t, `bench: \d+ of \d+ calls failed; the first: `, stderr)
}

// TestBenchRemoteRefused: a run that needs more accounts than the server
// holds (1000) ends before it starts with the reason and status 1, instead
// of a report of ops that all fail with account_not_found.
func TestBenchRemoteRefused(t *testing.T) {
	addr := startServer(t)
	start := time.Now()
	_, stderr, code := runApp(t, "bench", "--addr", addr, "--duration", "20s", "--batch", "64",
		"--accounts", "1000000", "--progress-every", "0")
	require.Equal(t, 1, code, stderr)
	assert.Less(t, time.Since(start), 10*time.Second, "the run stops at the first refusal")
	assert.Contains(t, stderr, "refused the ops")
	assert.Contains(t, stderr, "above its MaxAccounts")
}

func TestBenchRemoteTable(t *testing.T) {
	addr := startServer(t)
	out, stderr, code := runApp(t, "bench", "--addr", addr, "--duration", "1s", "--batch", "1",
		"--submitters", "4", "--accounts", "1000", "--rate", "2000")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "throughput")
	assert.Contains(t, out, "to committed p50 / p99 / p99.9")
	assert.Regexp(t, `offered +2000 tx/s`, out)
}

// The JSON report names the offered rate, so a series of runs can be
// plotted against it (docs/benchmarks.md).
func TestBenchOfferedRate(t *testing.T) {
	out, stderr, code := runApp(t, "bench", "--duration", "300ms", "--accounts", "1000",
		"--dir", t.TempDir(), "--json", "--rate", "5000")
	require.Equal(t, 0, code, stderr)
	var rep benchReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Equal(t, 5000.0, rep.Rate, out)
	assert.Contains(t, out, `"offered_tx_per_second": 5000`)
}

func TestBenchInProcess(t *testing.T) {
	out, stderr, code := runAppTTY(context.Background(), "bench", "--duration", "1s", "--accounts", "10000",
		"--dir", t.TempDir(), "--json", "--progress-every", "100ms")
	require.Equal(t, 0, code, stderr)
	var rep benchReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Equal(t, "in-process", rep.Mode)
	assert.Positive(t, rep.Throughput)
	// a bar on the terminal, redrawn with the last whole interval's numbers
	assert.Contains(t, stderr, "100%")
	assert.Regexp(t, `\d+ tx/s  p50 \S+ p99 \S+  lag seq>cmp \d+ cmp>com \d+ com>snap \d+  pressure (idle|low|high)`, stderr)
	assert.True(t, strings.HasSuffix(stderr, "\n"))

	for _, args := range [][]string{{"--progress-every", "0"}, {"--quiet"}} {
		_, stderr, code = runAppTTY(context.Background(), append([]string{"bench", "--duration", "200ms",
			"--accounts", "1000", "--dir", t.TempDir()}, args...)...)
		require.Equal(t, 0, code, stderr)
		assert.Empty(t, stderr, "no progress with %v", args)
	}
	_, stderr, code = runApp(t, "bench", "--duration", "200ms", "--accounts", "1000", "--dir", t.TempDir())
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr, "no progress where stderr is not a terminal")
}

// TestBenchSignal runs the real binary, interrupts it mid-run, and checks
// that it prints its report, removes its temporary directory and exits
// with 128 + the signal number.
func TestBenchSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		tmp := t.TempDir()
		cmd := exec.Command(bin, "bench", "--duration", "60s", "--accounts", "1000", "--json")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Start())
		start := time.Now()
		// The run has begun once its temporary ledger directory exists.
		require.Eventually(t, func() bool { e, _ := os.ReadDir(tmp); return len(e) > 0 }, 20*time.Second, 10*time.Millisecond)
		time.Sleep(500 * time.Millisecond) // some transactions to report
		require.NoError(t, cmd.Process.Signal(tc.sig))
		err := cmd.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, stderr.String())
		assert.Equal(t, tc.code, ee.ExitCode(), stderr.String())
		assert.Less(t, time.Since(start), 30*time.Second, "stopped early")
		var rep benchReport
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
		assert.Positive(t, rep.Ops)
		assert.True(t, rep.Interrupted)
		assert.Less(t, rep.Elapsed, 30*time.Second)
		left, _ := os.ReadDir(tmp)
		assert.Empty(t, left, "temporary directory removed")
		assert.Contains(t, stderr.String(), "interrupted by")
	}
}

// TestBenchRemoteInterrupted: a signal (here its cancellation, as
// interrupt.Context delivers it) stops new calls, lets those in flight
// finish, prints the report and exits 130; no call counts as failed.
func TestBenchRemoteInterrupted(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	time.AfterFunc(500*time.Millisecond, func() { cancel(&interrupt.Error{Signal: syscall.SIGINT}) })
	start := time.Now()
	out, stderr, code := runAppContext(ctx, "bench", "--addr", addr, "--duration", "60s", "--batch", "64",
		"--submitters", "2", "--accounts", "1000", "--json")
	require.Equal(t, 130, code, stderr)
	assert.Less(t, time.Since(start), 30*time.Second)
	var rep benchReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Positive(t, rep.Ops)
	assert.Zero(t, rep.FailedCalls, rep.FirstError)
	assert.True(t, rep.Interrupted)
	assert.Contains(t, stderr, "interrupted by SIGINT")
}
