package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHistoryAndQuery: ledger history and ledger query against `ledger
// serve --index`, in text and JSON, paging with --all; bad flags are usage
// errors (exit 2), a refused filter a failure naming the field (exit 1).
func TestHistoryAndQuery(t *testing.T) {
	_, _, m, stop := startServe(t, t.TempDir(), "--index")
	defer func() { require.NoError(t, stop()) }()
	addr := m[1]
	// withAddr puts --addr after the command's words (path).
	withAddr := func(args []string) []string {
		n := 1
		if args[0] == "account" || args[0] == "query" {
			n = 2
		}
		n = min(n, len(args))
		return append(append(args[:n:n], "--addr", addr), args[n:]...)
	}
	run := func(args ...string) string {
		t.Helper()
		out, stderr, code := runApp(t, withAddr(args)...)
		require.Equal(t, 0, code, "%v: %s", args, stderr)
		return out
	}
	run("account", "create", "--ledger", "1", "--flags", "history", "7")
	run("account", "create", "--ledger", "1", "--code", "3", "8")
	for range 5 {
		run("deposit", "7", "10")
	}
	run("transfer", "7", "8", "4")
	out := run("history", "--limit", "2", "--all", "7")
	require.Equal(t, 6, strings.Count(out, "\ntx "), out)
	require.Contains(t, out, "credits_posted 50")
	require.Contains(t, out, "next page: --cursor ")
	var page struct {
		AsOf      uint64 `json:"as_of"`
		Transfers []struct {
			ID      uint64 `json:"id"`
			Kind    string `json:"kind"`
			Balance struct {
				DebitsPosted  uint64 `json:"debits_posted"`
				CreditsPosted uint64 `json:"credits_posted"`
			} `json:"balance"`
		} `json:"transfers"`
	}
	out = run("history", "--json", "--reverse", "--limit", "1", "--debits-only", "7")
	require.NoError(t, json.Unmarshal([]byte(out), &page), out)
	require.Len(t, page.Transfers, 1)
	require.Equal(t, "transfer", page.Transfers[0].Kind)
	require.Equal(t, uint64(4), page.Transfers[0].Balance.DebitsPosted)
	require.Equal(t, uint64(50), page.Transfers[0].Balance.CreditsPosted)
	require.Equal(t, page.AsOf, page.Transfers[0].ID)

	out = run("query", "transfers", "--ledger", "1", "--reverse", "--limit", "10")
	require.Equal(t, 6, strings.Count(out, "\ntx "), out)
	out = run("query", "accounts", "--code", "3", "--json", "--limit", "10")
	require.Contains(t, out, `"id": 8`)
	require.NotContains(t, out, `"id": 7`)

	for _, args := range [][]string{
		{"history", "--since", "yesterday", "7"},
		{"history", "--debits-only", "--credits-only", "7"},
		{"history"},
		{"query", "transfers", "extra"},
		{"query", "transfers", "--ledger", "4294967297"},
		{"query", "accounts", "--ledger", "4294967297"},
		{"query", "accounts", "--code", "65536"},
	} {
		_, stderr, code := runApp(t, withAddr(args)...)
		require.Equal(t, 2, code, "%v: %s", args, stderr)
		if args[0] == "query" && len(args) == 4 {
			require.Contains(t, stderr, args[2]+" "+args[3]+" out of range", args)
		}
	}
	_, stderr, code := runApp(t, "history", "--addr", addr, "--limit", "9000", "7")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "limit")
	_, stderr, code = runApp(t, "history", "--addr", addr, "--limit", "5", "8")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "history flag")
}

// TestIndexFlags: without --index the server keeps no history index, and
// ledger history and query fail (exit 1) saying so; --disable-index, gone
// now that the index is off by default, is a usage error (exit 2) naming
// --index, for serve and bench, as a flag or as LEDGER_DISABLE_INDEX.
func TestIndexFlags(t *testing.T) {
	addr := startServer(t)
	_, stderr, code := runApp(t, "account", "create", "--addr", addr, "--ledger", "1", "--flags", "history", "7")
	require.Equal(t, 0, code, stderr)
	for _, args := range [][]string{{"history", "--addr", addr, "7"}, {"query", "transfers", "--addr", addr}} {
		_, stderr, code := runApp(t, args...)
		require.Equal(t, 1, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, "indexes are off", args)
	}

	for _, args := range [][]string{
		{"serve", "--dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "off", "--disable-index"},
		{"bench", "--dir", t.TempDir(), "--duration", "10ms", "--disable-index"},
	} {
		_, stderr, code := runApp(t, args...)
		require.Equal(t, 2, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, "--index", args)
	}
	t.Setenv("LEDGER_DISABLE_INDEX", "true")
	_, stderr, code = runApp(t, "serve", "--dir", t.TempDir(), "--addr", "127.0.0.1:0", "--http-addr", "off")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "LEDGER_DISABLE_INDEX")
}
