package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
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

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
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
	f := startServerWith(t, Config{}, false)
	u := f.httpURL()
	code, out := httpDo(t, "POST", u+"/v1/ops", `{"type":"deposit","account":1,"amount":100}`)
	require.Equal(t, 200, code, out)
	assert.Equal(t, "account_not_found", out["fail"], "account 1 was not created")
	code, out = httpDo(t, "POST", u+"/v1/ops?wait=snapshot",
		`[{"type":"create_account","id":1,"ledger":1,"flags":["debits_must_not_exceed_credits"]},
		  {"type":"create_account","id":2,"ledger":1,"code":9,"user_data_0":7,"flags":["debits_must_not_exceed_credits","history"]},
		  {"type":"create_account","id":3,"ledger":1}]`)
	require.Equal(t, 200, code, out)
	assert.Equal(t, float64(2), out["first"])
	assert.Equal(t, float64(4), out["last"])
	code, out = httpDo(t, "GET", u+"/v1/accounts/2", "")
	require.Equal(t, 200, code, out)
	assert.Equal(t, map[string]any{"id": float64(2), "ledger": float64(1), "code": float64(9), "flags": []any{"debits_must_not_exceed_credits", "history"},
		"user_data": []any{float64(7), float64(0)}, "debits_posted": float64(0), "credits_posted": float64(0),
		"debits_pending": float64(0), "credits_pending": float64(0), "balance": float64(0)}, out)
	code, out = httpDo(t, "POST", u+"/v1/ops", `{"type":"create_account","id":3,"ledger":2}`)
	require.Equal(t, 200, code, out)
	assert.Equal(t, "exists_with_different_ledger", out["fail"])
	assert.Equal(t, map[string]any{"id": float64(3), "ledger": float64(2), "code": float64(0), "flags": []any{}, "user_data": []any{float64(0), float64(0)}}, out["account"])
	code, out = httpDo(t, "POST", u+"/v1/ops", `{"type":"deposit","account":1,"amount":100}`)
	require.Equal(t, 200, code, out)
	assert.Equal(t, "ok", out["fail"])
	assert.Equal(t, "deposit", out["kind"])
	assert.Equal(t, []any{
		map[string]any{"account": float64(0), "column": "debits_posted", "delta": float64(100), "value": float64(100)},
		map[string]any{"account": float64(1), "column": "credits_posted", "delta": float64(100), "value": float64(100)}}, out["entries"])

	code, out = httpDo(t, "POST", u+"/v1/ops?wait=snapshot",
		`[{"type":"transfer","from":1,"to":2,"amount":30},{"type":"withdrawal","account":2,"amount":10},
		  {"type":"composite","legs":[{"account":1,"delta":-5},{"account":3,"delta":5}],"no_negative":true}]`)
	require.Equal(t, 200, code, out)
	assert.Equal(t, float64(7), out["first"])
	assert.Equal(t, float64(9), out["last"])

	for acct, want := range map[int]float64{1: 65, 2: 20, 3: 5, 0: -90} {
		code, out = httpDo(t, "GET", u+"/v1/accounts/"+strconv.Itoa(acct)+"/balance", "")
		require.Equal(t, 200, code)
		assert.Equal(t, want, out["balance"], "account %d", acct)
	}
	code, out = httpDo(t, "GET", u+"/v1/tx/7", "")
	require.Equal(t, 200, code)
	assert.Equal(t, "snapshot", out["status"])
	assert.Equal(t, "transfer", out["result"].(map[string]any)["kind"])

	code, _ = httpDo(t, "POST", u+"/v1/ops?wait=none", `{"type":"withdraw","account":3,"amount":500}`)
	require.Equal(t, 400, code, "one spelling of each op type")
	code, out = httpDo(t, "POST", u+"/v1/ops?wait=none", `{"type":"withdrawal","account":3,"amount":500}`)
	require.Equal(t, 202, code)
	assert.Equal(t, float64(10), out["id"])
	code, out = httpDo(t, "GET", u+"/v1/indexes", "")
	require.Equal(t, 200, code)
	assert.Equal(t, float64(10), out["sequenced"])

	// errors
	code, out = httpDo(t, "GET", u+"/v1/accounts/99999", "")
	assert.Equal(t, 404, code)
	assert.Equal(t, float64(wire.CodeAccountNotFound), out["code"])
	code, out = httpDo(t, "GET", u+"/v1/accounts/99999/balance", "")
	assert.Equal(t, 404, code)
	assert.Equal(t, float64(wire.CodeAccountNotFound), out["code"])
	code, out = httpDo(t, "POST", u+"/v1/ops", `{"type":"create_account","id":5,"ledger":0}`)
	assert.Equal(t, 400, code)
	assert.Equal(t, float64(wire.CodeLedgerZero), out["code"])
	code, out = httpDo(t, "POST", u+"/v1/ops", `{"type":"create_account","id":5,"ledger":1,"flags":["closd"]}`)
	assert.Equal(t, 400, code)
	assert.Contains(t, out["error"], `op.flags (create_account): unknown flag "closd"`)
	code, out = httpDo(t, "POST", u+"/v1/ops", `{"type":"create_account","id":5,"ledger":4294967296}`)
	assert.Equal(t, 400, code)
	assert.Contains(t, out["error"], `op.ledger (create_account): 4294967296 out of range`)
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

// parseMetrics parses the exposition with prometheus/common's expfmt and
// returns every sample by name and labels (as the text format spells
// them: `name{a="x",b="y"}`; histograms as name_count, name_sum and
// name_bucket{le=...}), and the families by name.
func parseMetrics(t *testing.T, body io.Reader) map[string]float64 {
	out, _ := parseFamilies(t, body)
	return out
}

func parseFamilies(t *testing.T, body io.Reader) (map[string]float64, map[string]*dto.MetricFamily) {
	t.Helper()
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	fams, err := p.TextToMetricFamilies(body)
	require.NoError(t, err)
	out := map[string]float64{}
	key := func(name string, m *dto.Metric, extra ...string) string {
		var ls []string
		for _, lp := range m.GetLabel() {
			ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
		}
		ls = append(ls, extra...)
		if len(ls) == 0 {
			return name
		}
		return name + "{" + strings.Join(ls, ",") + "}"
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key(name, m)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key(name, m)] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[key(name+"_count", m)] = float64(h.GetSampleCount())
				out[key(name+"_sum", m)] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					out[key(name+"_bucket", m, fmt.Sprintf("le=%q", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)))] = float64(b.GetCumulativeCount())
				}
			default:
				out[key(name, m)] = m.GetUntyped().GetValue()
			}
		}
	}
	return out, fams
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
	m, fams := parseFamilies(t, resp.Body)
	base := float64(f.base) // the accounts, created in process
	assert.Equal(t, base+3, m[`ledger_index{level="sequenced"}`])
	assert.Equal(t, base+3, m[`ledger_index{level="snapshot"}`])
	assert.Equal(t, float64(1), m[`ledger_server_outcomes_total{kind="withdrawal",reason="exceeds_credits"}`])
	assert.Equal(t, float64(2), m[`ledger_server_connections`]) // the client's default pool
	assert.Equal(t, float64(1), m[`ledger_server_requests_total{type="submit"}`])
	assert.Equal(t, float64(3), m[`ledger_server_ops_submitted_total`])
	assert.Contains(t, m, `ledger_dedup_expired_total`)
	assert.Equal(t, float64(0), m[`ledger_dedup_expired_total`])
	for name, typ := range map[string]dto.MetricType{
		"ledger_server_submit_wait_seconds":    dto.MetricType_HISTOGRAM,
		"ledger_wal_sync_seconds":              dto.MetricType_HISTOGRAM,
		"ledger_wal_group_commit_transactions": dto.MetricType_HISTOGRAM,
		"go_goroutines":                        dto.MetricType_GAUGE,
		"process_resident_memory_bytes":        dto.MetricType_GAUGE,
	} {
		if assert.Contains(t, fams, name) {
			assert.Equal(t, typ, fams[name].GetType(), name)
		}
	}
	assert.Equal(t, float64(1), m[`ledger_server_submit_wait_seconds_count{level="committed"}`], "the withdrawal")
	assert.Equal(t, float64(1), m[`ledger_server_submit_wait_seconds_bucket{level="committed",le="+Inf"}`])
	assert.Equal(t, float64(0), m[`ledger_server_submit_wait_seconds_count{level="computed"}`])
	st := f.l.Stats()
	assert.Equal(t, float64(st.WALBatches), m[`ledger_wal_sync_seconds_count`])
	assert.InEpsilon(t, st.WALSyncTime.Seconds(), m[`ledger_wal_sync_seconds_sum`], 1e-12)
	assert.Equal(t, base+3, m[`ledger_wal_group_commit_transactions_sum`])
	assert.Equal(t, m[`ledger_wal_sync_seconds_count`], m[`ledger_wal_sync_seconds_bucket{le="+Inf"}`])
	for name := range m {
		assert.NotContains(t, name, "per_second", "rates are Prometheus's to compute")
	}
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "ledger_") {
			continue // go_info's version label is the Go release
		}
		for _, mm := range f.GetMetric() {
			for _, lp := range mm.GetLabel() {
				if lp.GetName() != "route" && lp.GetName() != "le" {
					assert.Regexp(t, `^[a-z0-9_+]+$`, lp.GetValue(), "%s label %s is snake_case", f.GetName(), lp.GetName())
				}
			}
		}
	}

	// Ledger-wide counters (ledger.Stats) include transactions submitted
	// in process, which the server never saw.
	res, err := f.l.SubmitAndWait(ctx, ledger.Transfer{From: 5, To: 6, Amount: 1}, ledger.Committed)
	require.NoError(t, err)
	require.Equal(t, ledger.ExceedsCredits, res.Fail)
	_, err = c.Snapshot(ctx)
	require.NoError(t, err)
	m = getMetrics(t, f)
	assert.Equal(t, float64(1), m[`ledger_transactions_total{kind="withdrawal",reason="exceeds_credits"}`])
	assert.Equal(t, float64(1), m[`ledger_transactions_total{kind="transfer",reason="exceeds_credits"}`])
	assert.Equal(t, float64(2), m[`ledger_transactions_total{kind="deposit",reason="ok"}`])
	assert.Equal(t, float64(2), m[`ledger_fails_total{reason="exceeds_credits"}`])
	assert.Equal(t, float64(0), m[`ledger_fails_total{reason="duplicate"}`])
	assert.NotContains(t, m, `ledger_fails_total{reason="ok"}`)
	assert.Equal(t, float64(0), m[`ledger_server_outcomes_total{kind="transfer",reason="exceeds_credits"}`], "not seen by the server")
	assert.Equal(t, base+4, m[`ledger_submitted_total`])
	assert.Equal(t, base+4, m[`ledger_committed_total`])
	assert.Equal(t, float64(f.l.Stats().WALBatches), m[`ledger_wal_batches_total`], "idle: nothing changes")
	assert.Positive(t, m[`ledger_wal_bytes_total`])
	assert.Positive(t, m[`ledger_wal_sync_seconds_sum`])
	assert.Equal(t, m[`ledger_wal_batches_total`]+1, m[`ledger_syncs_total`], "WAL batches plus one manifest")
	assert.Equal(t, float64(1), m[`ledger_snapshots_total`])
	assert.Equal(t, base+4, m[`ledger_snapshot_persisted_tx`])
	assert.Contains(t, []float64{0, 1, 2}, m[`ledger_pressure_level`])
	for _, name := range []string{"parks", "unparks", "yields"} {
		assert.Contains(t, m, "ledger_pressure_"+name+"_total")
	}
	assert.Equal(t, float64(1), m[`ledger_server_requests_total{type="snapshot"}`])
	assert.Equal(t, float64(1), m[`ledger_http_requests_total{code="200",route="/metrics"}`], "the first scrape")
	code, _ := httpDo(t, "GET", f.httpURL()+"/v1/tx/999999", "")
	require.Equal(t, 404, code)
	resp, err = http.Get(f.httpURL() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	m, fams = parseFamilies(t, resp.Body)
	assert.Equal(t, dto.MetricType_COUNTER, fams["ledger_http_requests_total"].GetType())
	assert.Equal(t, dto.MetricType_HISTOGRAM, fams["ledger_http_request_seconds"].GetType())
	assert.Equal(t, float64(1), m[`ledger_http_request_seconds_count{route="/v1/tx/{id}"}`])
	assert.Equal(t, float64(1), m[`ledger_http_requests_total{code="404",route="/v1/tx/{id}"}`])
	assert.Equal(t, float64(1), m[`ledger_server_errors_total{code="not_found"}`])
}

// TestMetricsWALHistograms checks that the WAL's sync-time and
// group-commit histograms have the ledger's finite buckets and that their
// counts grow with load: batches of one land in le="1", a burst in the
// larger buckets.
func TestMetricsWALHistograms(t *testing.T) {
	f := startServerWith(t, Config{}, false)
	c := f.dial(t)
	ctx := context.Background()
	scrape := func() map[string]*dto.Histogram {
		resp, err := http.Get(f.httpURL() + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		_, fams := parseFamilies(t, resp.Body)
		out := map[string]*dto.Histogram{}
		for _, name := range []string{"ledger_wal_sync_seconds", "ledger_wal_group_commit_transactions"} {
			require.Contains(t, fams, name)
			require.Equal(t, dto.MetricType_HISTOGRAM, fams[name].GetType())
			h := fams[name].GetMetric()[0].GetHistogram()
			bs := h.GetBucket()
			require.Len(t, bs, ledger.HistogramBuckets+1, "%s: the ledger's finite buckets and +Inf", name)
			require.True(t, math.IsInf(bs[ledger.HistogramBuckets].GetUpperBound(), 1))
			require.Equal(t, h.GetSampleCount(), bs[ledger.HistogramBuckets].GetCumulativeCount(), "%s: +Inf is the count", name)
			for i, b := range bs[:ledger.HistogramBuckets] {
				if i > 0 {
					prev := h.GetBucket()[i-1]
					require.InEpsilon(t, 2*prev.GetUpperBound(), b.GetUpperBound(), 1e-9, "%s: bounds double", name)
					require.GreaterOrEqual(t, b.GetCumulativeCount(), prev.GetCumulativeCount(), "%s: cumulative", name)
				}
				require.LessOrEqual(t, b.GetCumulativeCount(), h.GetSampleCount())
			}
			out[name] = h
		}
		return out
	}
	bucket := func(h *dto.Histogram, le float64) uint64 {
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() == le {
				return b.GetCumulativeCount()
			}
		}
		t.Fatalf("no bucket le=%g", le)
		return 0
	}
	grown := func(a, b *dto.Histogram) int {
		n := 0
		for i := range ledger.HistogramBuckets {
			if b.GetBucket()[i].GetCumulativeCount() > a.GetBucket()[i].GetCumulativeCount() {
				n++
			}
		}
		return n
	}

	h0 := scrape()
	for _, h := range h0 {
		require.Zero(t, h.GetSampleCount())
	}
	assert.Equal(t, 50e-6, h0["ledger_wal_sync_seconds"].GetBucket()[0].GetUpperBound())
	assert.Equal(t, 1.0, h0["ledger_wal_group_commit_transactions"].GetBucket()[0].GetUpperBound())
	// The accounts' creation commits first; the counts below are the
	// growth past it.
	createAccounts(t, f.l)
	h0 = scrape()
	gc := h0["ledger_wal_group_commit_transactions"]

	for i := range 5 {
		_, err := c.SubmitAndWait(ctx, ledger.Deposit{Account: 1 + uint64(i), Amount: 1}, ledger.Committed)
		require.NoError(t, err)
	}
	h1 := scrape()
	g1, s1 := h1["ledger_wal_group_commit_transactions"], h1["ledger_wal_sync_seconds"]
	assert.Equal(t, uint64(5), g1.GetSampleCount()-gc.GetSampleCount())
	assert.Equal(t, uint64(5), bucket(g1, 1)-bucket(gc, 1), "one at a time: batches of one")
	assert.Equal(t, 5.0, g1.GetSampleSum()-gc.GetSampleSum())
	assert.Equal(t, uint64(5), s1.GetSampleCount()-h0["ledger_wal_sync_seconds"].GetSampleCount())
	assert.Positive(t, s1.GetSampleSum())
	assert.GreaterOrEqual(t, grown(h0["ledger_wal_sync_seconds"], s1), 2, "sync times %v", s1.GetBucket())

	ops := make([]ledger.Op, DefaultMaxBatch)
	for i := range ops {
		ops[i] = ledger.Deposit{Account: 1 + uint64(i)%100, Amount: 1}
	}
	_, _, err := c.SubmitBatch(ctx, ops, ledger.Committed)
	require.NoError(t, err)
	h2 := scrape()
	g2, s2 := h2["ledger_wal_group_commit_transactions"], h2["ledger_wal_sync_seconds"]
	st := f.l.Stats()
	assert.Equal(t, st.WALBatches, g2.GetSampleCount())
	assert.Equal(t, st.WALBatches, s2.GetSampleCount())
	assert.Equal(t, float64(5+len(ops))+gc.GetSampleSum(), g2.GetSampleSum())
	assert.Less(t, bucket(g2, 8), g2.GetSampleCount(), "a burst commits batches of more than 8: %v", g2.GetBucket())
	assert.GreaterOrEqual(t, grown(g1, g2), 2, "group sizes %v", g2.GetBucket())
	assert.GreaterOrEqual(t, grown(s1, s2), 2, "sync times %v", s2.GetBucket())
	assert.Greater(t, s2.GetSampleSum(), s1.GetSampleSum())
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
