package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/client"
	"github.com/lanework/lanework/ledger/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func httpDo(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	}
	return resp.StatusCode, out
}

func TestHTTPAPI(t *testing.T) {
	f := startServer(t, Config{})
	u := f.httpURL()
	code, out := httpDo(t, "POST", u+"/v1/ops", `{"type":"deposit","account":1,"amount":100}`)
	require.Equal(t, 200, code, out)
	assert.Equal(t, "ok", out["fail"])
	assert.Equal(t, "deposit", out["kind"])
	assert.Len(t, out["entries"], 2)

	code, out = httpDo(t, "POST", u+"/v1/ops?wait=snapshot",
		`[{"type":"transfer","from":1,"to":2,"amount":30},{"type":"withdrawal","account":2,"amount":10},
		  {"type":"composite","legs":[{"account":1,"delta":-5},{"account":3,"delta":5}],"no_negative":true}]`)
	require.Equal(t, 200, code, out)
	assert.Equal(t, float64(2), out["first"])
	assert.Equal(t, float64(4), out["last"])

	for acct, want := range map[int]float64{1: 65, 2: 20, 3: 5, 0: -90} {
		code, out = httpDo(t, "GET", u+"/v1/accounts/"+strconv.Itoa(acct)+"/balance", "")
		require.Equal(t, 200, code)
		assert.Equal(t, want, out["balance"], "account %d", acct)
	}
	code, out = httpDo(t, "GET", u+"/v1/tx/2", "")
	require.Equal(t, 200, code)
	assert.Equal(t, "snapshot", out["status"])
	assert.Equal(t, "transfer", out["result"].(map[string]any)["kind"])

	code, _ = httpDo(t, "POST", u+"/v1/ops?wait=none", `{"type":"withdraw","account":3,"amount":500}`)
	require.Equal(t, 400, code, "one spelling of each op type")
	code, out = httpDo(t, "POST", u+"/v1/ops?wait=none", `{"type":"withdrawal","account":3,"amount":500}`)
	require.Equal(t, 202, code)
	assert.Equal(t, float64(5), out["id"])
	code, out = httpDo(t, "GET", u+"/v1/indexes", "")
	require.Equal(t, 200, code)
	assert.Equal(t, float64(5), out["sequenced"])

	// errors
	code, out = httpDo(t, "POST", u+"/v1/ops", `{"type":"deposit","account":99999,"amount":1}`)
	assert.Equal(t, 400, code)
	assert.Equal(t, float64(21), out["code"])
	code, _ = httpDo(t, "POST", u+"/v1/ops", `{"type":`)
	assert.Equal(t, 400, code)
	code, _ = httpDo(t, "POST", u+"/v1/ops", `{"type":"mint","account":1,"amount":1}`)
	assert.Equal(t, 400, code)
	// A misspelt field is refused, not dropped (here it would lose the
	// op's idempotency key), and so is anything after the value.
	code, out = httpDo(t, "POST", u+"/v1/ops", `{"type":"deposit","account":1,"amount":1,"userref":9}`)
	assert.Equal(t, 400, code)
	assert.Equal(t, float64(1), out["code"])
	assert.Contains(t, out["error"], `op.userref (deposit): not a field of deposit`)
	code, _ = httpDo(t, "POST", u+"/v1/ops", `[{"type":"deposit","account":1,"amount":1,"legz":[]}]`)
	assert.Equal(t, 400, code)
	code, _ = httpDo(t, "POST", u+"/v1/ops", `{"type":"deposit","account":1,"amount":1} {"type":"deposit","account":1,"amount":1}`)
	assert.Equal(t, 400, code)
	code, out = httpDo(t, "POST", u+"/v1/ops", `[{"type":"deposit","account":1,"amount":1},{"type":"transfer","from":1,"to":1,"amount":1}]`)
	assert.Equal(t, 400, code)
	assert.Equal(t, float64(1), out["index"])
	code, _ = httpDo(t, "POST", u+"/v1/ops?wait=forever", `{"type":"deposit","account":1,"amount":1}`)
	assert.Equal(t, 400, code)
	code, _ = httpDo(t, "GET", u+"/v1/tx/999", "")
	assert.Equal(t, 404, code)
	code, _ = httpDo(t, "GET", u+"/v1/accounts/x/balance", "")
	assert.Equal(t, 400, code)
	code, _ = httpDo(t, "GET", u+"/v1/nothing", "")
	assert.Equal(t, 404, code)
	code, _ = httpDo(t, "POST", u+"/v1/ops", strings.Repeat(" ", 5<<20))
	assert.Equal(t, 413, code)

	code, _ = httpDo(t, "GET", u+"/healthz", "")
	assert.Equal(t, 200, code)
}

var (
	metricLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*")(,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*")*\})? (\S+)$`)
	metaLine   = regexp.MustCompile(`^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$`)
)

// parseMetrics checks the Prometheus text format line by line and returns
// the samples by name and labels.
func parseMetrics(t *testing.T, body io.Reader) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	typed := map[string]bool{}
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := sc.Text()
		if m := metaLine.FindStringSubmatch(line); m != nil {
			if m[1] == "TYPE" {
				require.Contains(t, []string{"counter", "gauge"}, m[3], line)
				typed[m[2]] = true
			}
			continue
		}
		m := metricLine.FindStringSubmatch(line)
		require.NotNil(t, m, "bad metrics line %q", line)
		require.True(t, typed[m[1]], "sample before its TYPE: %q", line)
		v, err := strconv.ParseFloat(m[len(m)-1], 64)
		require.NoError(t, err, line)
		out[strings.TrimSuffix(line, " "+m[len(m)-1])] = v
	}
	require.NoError(t, sc.Err())
	return out
}

func TestMetrics(t *testing.T) {
	f := startServer(t, Config{})
	c := f.dial(t)
	ctx := context.Background()
	_, err := c.SubmitAndWait(ctx, ledger.Withdrawal{Account: 1, Amount: 1}, ledger.Committed)
	require.NoError(t, err)
	_, _, err = c.SubmitBatch(ctx, []ledger.Op{ledger.Deposit{Account: 1, Amount: 1}, ledger.Deposit{Account: 2, Amount: 1}}, ledger.Snapshot)
	require.NoError(t, err)
	resp, err := http.Get(f.httpURL() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	m := parseMetrics(t, resp.Body)
	assert.Equal(t, float64(3), m[`ledger_index{level="sequenced"}`])
	assert.Equal(t, float64(3), m[`ledger_index{level="snapshot"}`])
	assert.Equal(t, float64(1), m[`ledger_server_outcomes_total{kind="withdrawal",reason="insufficient_funds"}`])
	assert.Equal(t, float64(2), m[`ledger_server_connections`]) // the client's default pool
	assert.Equal(t, float64(1), m[`ledger_server_requests_total{type="submit"}`])
	assert.Equal(t, float64(3), m[`ledger_server_ops_submitted_total`])
	assert.Contains(t, m, `ledger_index_lag{from="committed",to="snapshot"}`)
	assert.Contains(t, m, `ledger_committed_tx_per_second`)

	// Ledger-wide counters (ledger.Stats) include transactions submitted
	// in process, which the server never saw.
	res, err := f.l.SubmitAndWait(ctx, ledger.Transfer{From: 5, To: 6, Amount: 1}, ledger.Committed)
	require.NoError(t, err)
	require.Equal(t, ledger.InsufficientFunds, res.Fail)
	_, err = c.Snapshot(ctx)
	require.NoError(t, err)
	m = getMetrics(t, f)
	assert.Equal(t, float64(1), m[`ledger_transactions_total{kind="withdrawal",reason="insufficient_funds"}`])
	assert.Equal(t, float64(1), m[`ledger_transactions_total{kind="transfer",reason="insufficient_funds"}`])
	assert.Equal(t, float64(2), m[`ledger_transactions_total{kind="deposit",reason="ok"}`])
	assert.Equal(t, float64(2), m[`ledger_fails_total{reason="insufficient_funds"}`])
	assert.Equal(t, float64(0), m[`ledger_fails_total{reason="duplicate"}`])
	assert.NotContains(t, m, `ledger_fails_total{reason="ok"}`)
	assert.Equal(t, float64(0), m[`ledger_server_outcomes_total{kind="transfer",reason="insufficient_funds"}`], "not seen by the server")
	assert.Equal(t, float64(4), m[`ledger_submitted_total`])
	assert.Equal(t, float64(4), m[`ledger_committed_total`])
	assert.Equal(t, float64(f.l.Stats().WALBatches), m[`ledger_wal_batches_total`], "idle: nothing changes")
	assert.Positive(t, m[`ledger_wal_bytes_total`])
	assert.Positive(t, m[`ledger_wal_sync_seconds_total`])
	assert.Equal(t, m[`ledger_wal_batches_total`]+1, m[`ledger_syncs_total`], "WAL batches plus one manifest")
	assert.Equal(t, float64(1), m[`ledger_snapshots_total`])
	assert.Equal(t, float64(4), m[`ledger_snapshot_persisted_tx`])
	assert.Contains(t, []float64{0, 1, 2}, m[`ledger_pressure_level`])
	for _, name := range []string{"parks", "unparks", "yields"} {
		assert.Contains(t, m, "ledger_pressure_"+name+"_total")
	}
	assert.Equal(t, float64(1), m[`ledger_server_requests_total{type="snapshot"}`])
}

func getMetrics(t *testing.T, f *fixture) map[string]float64 {
	t.Helper()
	resp, err := http.Get(f.httpURL() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	return parseMetrics(t, resp.Body)
}

// TestShutdownAnswersInFlight shuts the server down under load: every
// request the server read is answered, and every acknowledged op is
// durable after the ledger is reopened.
func TestShutdownAnswersInFlight(t *testing.T) {
	f := startServer(t, Config{})
	c := f.dial(t)
	ctx := context.Background()
	var mu sync.Mutex
	var maxAcked ledger.TxID
	var wg sync.WaitGroup
	started := make(chan struct{})
	stopErrs := make(chan error, 16)
	var once sync.Once
	for g := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				res, err := c.SubmitAndWait(ctx, ledger.Deposit{Account: uint64(1 + g), Amount: 1}, ledger.Committed)
				if err != nil {
					stopErrs <- err // shutting down: unacknowledged
					return
				}
				once.Do(func() { close(started) })
				mu.Lock()
				maxAcked = max(maxAcked, res.ID)
				mu.Unlock()
			}
		})
	}
	<-started
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, f.s.Shutdown(sctx))
	wg.Wait()
	close(stopErrs)
	for err := range stopErrs {
		// a request in flight on the closing connection, or a new one
		// that finds the listener gone
		var oe *net.OpError
		if !errors.Is(err, client.ErrConnLost) && !errors.As(err, &oe) {
			t.Fatalf("unexpected error after shutdown: %v", err)
		}
	}
	require.NoError(t, f.l.Close())
	l, err := ledger.Open(ledger.Config{Dir: f.dir, MaxAccounts: testAccounts})
	require.NoError(t, err)
	x, err := l.Indexes()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, x.Committed, maxAcked)
	require.NoError(t, l.Close())
	f.l = reopened(t, f.dir) // for the fixture's cleanup
}

func reopened(t *testing.T, dir string) *ledger.Ledger {
	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: testAccounts})
	require.NoError(t, err)
	return l
}

// TestShutdownTellsIdleClients: a connection open at Shutdown receives a
// shutdown error frame (id 0) before it is closed.
func TestShutdownTellsIdleClients(t *testing.T) {
	f := startServer(t, Config{})
	r := newRaw(t, f)
	r.ping(1)
	require.NoError(t, f.s.Shutdown(context.Background()))
	r.wantError(0, wire.CodeShutdown)
	r.wantClosed()
}
