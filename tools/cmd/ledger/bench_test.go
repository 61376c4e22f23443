package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	assert.Contains(t, stderr, "tx/s", "progress line")
}

// TestBenchRemoteRefused: ops the server refuses (accounts above its 1000)
// end the run at once with the server's reason and status 1, instead of a
// report of zero ops and many failed calls.
func TestBenchRemoteRefused(t *testing.T) {
	addr := startServer(t)
	start := time.Now()
	_, stderr, code := runApp(t, "bench", "--addr", addr, "--duration", "20s", "--batch", "64",
		"--accounts", "1000000", "--progress-every", "0")
	require.Equal(t, 1, code, stderr)
	assert.Less(t, time.Since(start), 10*time.Second, "the run stops at the first refusal")
	assert.Contains(t, stderr, "refused the ops")
	assert.Contains(t, stderr, "MaxAccounts is 1000")
}

func TestBenchRemoteTable(t *testing.T) {
	addr := startServer(t)
	out, stderr, code := runApp(t, "bench", "--addr", addr, "--duration", "1s", "--batch", "1",
		"--submitters", "4", "--accounts", "1000", "--rate", "2000")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "throughput")
	assert.Contains(t, out, "to committed p50 / p99 / p99.9")
}

func TestBenchInProcess(t *testing.T) {
	out, stderr, code := runApp(t, "bench", "--duration", "1s", "--accounts", "10000", "--dir", t.TempDir(), "--json",
		"--progress-every", "100ms")
	require.Equal(t, 0, code, stderr)
	var rep benchReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Equal(t, "in-process", rep.Mode)
	assert.Positive(t, rep.Throughput)
	// the live line: one \r-rewritten line, ended by one newline
	lines := strings.Split(strings.TrimPrefix(stderr, "\r"), "\r")
	require.GreaterOrEqual(t, len(lines), 3, "about ten progress lines in 1 s: %q", stderr)
	assert.Regexp(t, `^ *\d+\.\ds +\d+ tx/s  p50 \S+ +p99 \S+ +lag seq>cmp \d+ cmp>com \d+ com>snap \d+  pressure (idle|low|high)$`, lines[1])
	assert.True(t, strings.HasSuffix(stderr, "\n"))
	assert.Equal(t, 1, strings.Count(stderr, "\n"))

	_, stderr, code = runApp(t, "bench", "--duration", "200ms", "--accounts", "1000", "--dir", t.TempDir(), "--progress-every", "0")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr, "no progress line")
}
