package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server"
)

// TestJSONMatchesHTTP: each command's --json has the keys (and values) of the
// HTTP API's answer to the same question.
func TestJSONMatchesHTTP(t *testing.T) {
	l, err := ledger.Open(ledger.Config{Dir: t.TempDir(), MaxAccounts: 1000})
	require.NoError(t, err)
	s, err := server.New(l, server.Config{Addr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
		require.NoError(t, l.Close())
	})
	addr, base := s.Addr().String(), "http://"+s.HTTPAddr().String()
	cli := func(args ...string) map[string]any {
		t.Helper()
		out, stderr, code := runApp(t, append(append([]string{args[0]}, "--addr", addr, "--json"), args[1:]...)...)
		require.Equal(t, 0, code, stderr)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), out)
		return m
	}
	httpJSON := func(method, path string) map[string]any {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		var m map[string]any
		require.NoError(t, json.Unmarshal(body, &m), string(body))
		return m
	}

	out, stderr, code := runApp(t, "account", "create", "--addr", addr, "--json", "--ledger", "1", "--code", "3", "--wait", "snapshot", "1")
	require.Equal(t, 0, code, stderr)
	var created map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &created), out)
	assert.Equal(t, httpJSON("GET", "/v1/tx/1")["result"], created, "account create --json is the HTTP result")
	out, stderr, code = runApp(t, "account", "lookup", "--addr", addr, "--json", "1")
	require.Equal(t, 0, code, stderr)
	var looked map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &looked), out)
	assert.Equal(t, httpJSON("GET", "/v1/accounts/1"), looked, "account lookup --json is GET /v1/accounts/{id}")

	dep := cli("deposit", "--ref", "7", "--wait", "snapshot", "1", "100")
	assert.Equal(t, "deposit", dep["kind"])
	assert.Equal(t, "ok", dep["fail"])
	tx := httpJSON("GET", "/v1/tx/2")
	assert.Equal(t, tx["result"], dep, "deposit --json is the HTTP result")
	assert.Equal(t, tx, cli("tx", "2"))
	assert.Equal(t, httpJSON("GET", "/v1/accounts/1/balance"), cli("balance", "1"))
	assert.Equal(t, httpJSON("GET", "/v1/indexes"), cli("indexes"))
	snapCLI, snapHTTP := cli("snapshot"), httpJSON("POST", "/v1/snapshot")
	assert.Equal(t, keys(snapHTTP), keys(snapCLI))

	// The retry: exit 0, and the JSON says what it duplicates.
	dup := cli("deposit", "--ref", "7", "1", "100")
	assert.Equal(t, "duplicate", dup["fail"])
	assert.Equal(t, float64(2), dup["dup_of"])
}

func keys(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ",")
}

// TestFlagsHaveEnvVars: every flag of the client and bench commands can come
// from the environment (serve, verify and dump are checked with their own
// commands; recover takes its cut only from the command line, never from a
// variable left in an environment). The flags that say what a transfer does
// (--pending, --post ID, --void ID, its ledger, code, ...) are the same: a
// variable left in an environment must never hold or post money.
func TestFlagsHaveEnvVars(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	common := map[string]bool{}
	for _, f := range opFlags() {
		common[f.Names()[0]] = true
	}
	for _, cmd := range app.Commands {
		switch cmd.Name {
		case "serve", "verify", "dump", "recover":
			continue
		}
		for _, f := range cmd.Flags {
			if cmd.Name == "transfer" && !common[f.Names()[0]] {
				ev, ok := f.(interface{ GetEnvVars() []string })
				require.True(t, ok)
				assert.Empty(t, ev.GetEnvVars(), "transfer --%s must come only from the command line", f.Names()[0])
				continue
			}
			ev, ok := f.(interface{ GetEnvVars() []string })
			require.True(t, ok)
			assert.NotEmpty(t, ev.GetEnvVars(), "%s --%s has no environment variable", cmd.Name, f.Names()[0])
		}
	}
}

func TestHelpListsExitCodesAndVersion(t *testing.T) {
	out, _, code := runApp(t, "--help")
	require.Equal(t, 0, code)
	for _, s := range []string{"EXIT STATUS", "already applied", "130", "143", "bad usage"} {
		assert.Contains(t, out, s)
	}
	out, _, code = runApp(t, "--version")
	require.Equal(t, 0, code)
	assert.Regexp(t, `^ledger version \S+.* \(go1\.\d+`, out)
}
