package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHistoryAndQuery: ledger history and ledger query against a served
// ledger, in text and JSON, paging with --all; bad flags are usage errors
// (exit 2), a refused filter a failure naming the field (exit 1).
func TestHistoryAndQuery(t *testing.T) {
	addr := startServer(t)
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
	} {
		_, stderr, code := runApp(t, withAddr(args)...)
		require.Equal(t, 2, code, "%v: %s", args, stderr)
	}
	_, stderr, code := runApp(t, "history", "--addr", addr, "--limit", "9000", "7")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "limit")
	_, stderr, code = runApp(t, "history", "--addr", addr, "--limit", "5", "8")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "history flag")
}
