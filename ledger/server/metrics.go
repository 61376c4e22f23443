package server

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
)

// metrics are the server's counters and histograms. The counters are
// plain atomics bumped on the hot paths and read by serverCollector at
// scrape time; histograms are client_golang's (lock-free Observe). Every
// value is a count, a sum or a level: rates are Prometheus's to compute.
type metrics struct {
	accepted     atomic.Uint64
	rejected     atomic.Uint64
	idleClosed   atomic.Uint64
	slowClosed   atomic.Uint64
	badFrames    atomic.Uint64
	ops          atomic.Uint64 // ops submitted through TCP and HTTP
	httpRejected atomic.Uint64
	tlsFails     atomic.Uint64
	requests     [256]atomic.Uint64  // by wire.Type
	errors       [64]atomic.Uint64   // by wire.Code (the last slot collects larger codes)
	authFails    [2][3]atomic.Uint64 // [tcp, http][missing, invalid, forbidden]
	// fails counts the outcomes the server saw (every op it waited for),
	// by kind and fail reason.
	fails [ledger.NumKinds][ledger.NumFailReasons]atomic.Uint64

	// submitWait[level] is the time from reading a submit-and-wait request
	// (TCP submit_wait, or one HTTP op with ?wait=) to its answer, by the
	// level waited for.
	submitWait [ledger.Snapshot + 1]prometheus.Observer
	httpReqs   *prometheus.CounterVec   // by route and code
	httpTime   *prometheus.HistogramVec // by route
}

var authProtos, authReasons = [2]string{"tcp", "http"}, [3]string{authMissing, authInvalid, authForbidden}

func (m *metrics) authFailure(proto, reason string) {
	for p := range authProtos {
		for r := range authReasons {
			if authProtos[p] == proto && authReasons[r] == reason {
				m.authFails[p][r].Add(1)
			}
		}
	}
}

func (m *metrics) observe(r *ledger.Result) {
	m.fails[min(int(r.Kind), ledger.NumKinds-1)][min(int(r.Fail), ledger.NumFailReasons-1)].Add(1)
}

// observeWait records a submit-and-wait's latency since start.
func (m *metrics) observeWait(level ledger.Level, start time.Time) {
	if level < ledger.Computed || level > ledger.Snapshot {
		return
	}
	m.submitWait[level].Observe(time.Since(start).Seconds())
}

// latencyBuckets span 50 µs to about 1.6 s: a group commit on a fast disk
// takes tens of microseconds, on a slow one milliseconds. They are the
// bounds of the ledger's WAL sync histogram (ledger.Stats.WALSyncTimes).
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 16)

// newRegistry makes the server's registry: the Go runtime and process
// collectors, the server's metrics and the ledger's Stats.
func (s *Server) newRegistry() *prometheus.Registry {
	m := &s.m
	reg := prometheus.NewRegistry()
	sw := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ledger_server_submit_wait_seconds",
		Help:    "Time from reading a submit-and-wait request to its answer, by the level waited for (computed, committed, snapshot).",
		Buckets: latencyBuckets,
	}, []string{"level"})
	for lv := ledger.Computed; lv <= ledger.Snapshot; lv++ {
		m.submitWait[lv] = sw.WithLabelValues(lv.String())
	}
	m.httpReqs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ledger_http_requests_total",
		Help: "HTTP requests by route (the pattern that served it, \"unmatched\" for none) and status code.",
	}, []string{"route", "code"})
	m.httpTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ledger_http_request_seconds",
		Help:    "Time to answer HTTP requests, by route.",
		Buckets: latencyBuckets,
	}, []string{"route"})
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		sw, m.httpReqs, m.httpTime,
		serverCollector{s}, ledgerCollector{s.ledger},
	)
	return reg
}

func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})
}

// desc is a metric description without constant labels.
func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// serverCollector reads the server's atomics at scrape time.
type serverCollector struct{ s *Server }

var (
	dConns        = desc("ledger_server_connections", "Open binary-protocol connections.")
	dHTTPConns    = desc("ledger_server_http_connections", "Open HTTP connections.")
	dConnEvents   = desc("ledger_server_connections_total", "Binary-protocol connections by what happened to them.", "event")
	dHTTPRejected = desc("ledger_server_http_connections_rejected_total", "HTTP connections refused at MaxHTTPConns.")
	dRequests     = desc("ledger_server_requests_total", "Binary-protocol requests by type.", "type")
	dBadFrames    = desc("ledger_server_bad_frames_total", "Frames that were oversized, truncated or did not decode.")
	dErrors       = desc("ledger_server_errors_total", "Error answers on both APIs by wire error code name.", "code")
	dOps          = desc("ledger_server_ops_submitted_total", "Operations submitted through this server.")
	dOutcomes     = desc("ledger_server_outcomes_total", "Outcomes of the transactions whose result this server waited for, by kind and fail reason.", "kind", "reason")
	dAuthFails    = desc("ledger_server_auth_failures_total", "Failed authentications by protocol and reason (missing, invalid, forbidden).", "proto", "reason")
	dTLSFails     = desc("ledger_server_tls_handshake_failures_total", "TLS handshakes of binary-protocol connections that failed.")
	dFrameMem     = desc("ledger_server_frame_memory_bytes", "Bytes of large request bodies lent now (bounded by MaxFrameMemory).")
)

func (c serverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dConns, dHTTPConns, dConnEvents, dHTTPRejected, dRequests, dBadFrames,
		dErrors, dOps, dOutcomes, dAuthFails, dTLSFails, dFrameMem} {
		ch <- d
	}
}

func (c serverCollector) Collect(ch chan<- prometheus.Metric) {
	s, m := c.s, &c.s.m
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	counter := func(d *prometheus.Desc, v uint64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
	}
	gauge(dConns, float64(s.open.Load()))
	gauge(dHTTPConns, float64(s.httpOpen.Load()))
	gauge(dFrameMem, float64(s.frameBufs.Lent()))
	counter(dConnEvents, m.accepted.Load(), "accepted")
	counter(dConnEvents, m.rejected.Load(), "rejected")
	counter(dConnEvents, m.idleClosed.Load(), "idle_closed")
	counter(dConnEvents, m.slowClosed.Load(), "slow_closed")
	counter(dHTTPRejected, m.httpRejected.Load())
	var other uint64
	for t := range m.requests {
		if wire.Type(t).IsRequest() {
			counter(dRequests, m.requests[t].Load(), wire.Type(t).String())
		} else {
			other += m.requests[t].Load()
		}
	}
	counter(dRequests, other, "unknown")
	counter(dBadFrames, m.badFrames.Load())
	for code := range m.errors {
		if v := m.errors[code].Load(); v != 0 {
			counter(dErrors, v, wire.Code(code).String())
		}
	}
	counter(dOps, m.ops.Load())
	for k := ledger.KindDeposit; int(k) < ledger.NumKinds; k++ {
		for f := ledger.OK; int(f) < ledger.NumFailReasons; f++ {
			counter(dOutcomes, m.fails[k][f].Load(), k.String(), f.String())
		}
	}
	for p := range authProtos {
		for r := range authReasons {
			counter(dAuthFails, m.authFails[p][r].Load(), authProtos[p], authReasons[r])
		}
	}
	counter(dTLSFails, m.tlsFails.Load())
}

// ledgerCollector exports ledger.Stats, taken once per scrape: every
// transaction the ledger executed since it was opened, whoever submitted
// it, and the work of its stages.
type ledgerCollector struct{ l func() *ledger.Ledger }

var (
	dUp        = desc("ledger_up", "1 if the ledger answers, 0 once it is closed or failed.")
	dIndex     = desc("ledger_index", "Pipeline progress marks: the highest transaction id at each level.", "level")
	dTx        = desc("ledger_transactions_total", "Transactions executed by the ledger since it was opened, by kind and outcome (reason \"ok\" or the fail reason).", "kind", "reason")
	dFails     = desc("ledger_fails_total", "Transactions rolled back since the ledger was opened, by fail reason (all kinds).", "reason")
	dSubmitted = desc("ledger_submitted_total", "Transactions sequenced since the ledger was opened.")
	dCommitted = desc("ledger_committed_total", "Transactions made durable since the ledger was opened.")
	dBatches   = desc("ledger_wal_batches_total", "WAL group commits (one synced write each).")
	dWALBytes  = desc("ledger_wal_bytes_total", "Encoded bytes of the WAL batches.")
	dSync      = desc("ledger_wal_sync_seconds", "Time the WAL stage spent in each synced group commit.")
	dGroup     = desc("ledger_wal_group_commit_transactions", "Transactions per WAL group commit.")
	dSyncs     = desc("ledger_syncs_total", "Synced commits: WAL batches plus snapshot manifests.")
	dSnapshots = desc("ledger_snapshots_total", "Snapshots made durable since the ledger was opened (periodic and requested).")
	dSnapTx    = desc("ledger_snapshot_persisted_tx", "Last transaction covered by the newest durable snapshot (0: none).")
	dExpired   = desc("ledger_dedup_expired_total", "Transactions whose user_ref the idempotency index named from a transaction past its retention: executed as new (likely a retry that came too late).")
	dPLevel    = desc("ledger_pressure_level", "Pressure level of the pipeline: 0 idle, 1 low, 2 high.")
	dParks     = desc("ledger_pressure_parks_total", "Times a pipeline stage parked.")
	dUnparks   = desc("ledger_pressure_unparks_total", "Times a parked pipeline stage was woken.")
	dYields    = desc("ledger_pressure_yields_total", "Times a pipeline stage yielded its P.")
)

func (c ledgerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dUp, dIndex, dTx, dFails, dSubmitted, dCommitted, dBatches, dWALBytes,
		dSync, dGroup, dSyncs, dSnapshots, dSnapTx, dExpired, dPLevel, dParks, dUnparks, dYields} {
		ch <- d
	}
}

func (c ledgerCollector) Collect(ch chan<- prometheus.Metric) {
	l := c.l() // a replica's changes as it leads or follows
	st := l.Stats()
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	counter := func(d *prometheus.Desc, v uint64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
	}
	up := 1.0
	if st.Closed || st.Failed {
		up = 0
	}
	gauge(dUp, up)
	x := st.Indexes
	for _, p := range []struct {
		l  ledger.Level
		id ledger.TxID
	}{{ledger.Sequenced, x.Sequenced}, {ledger.Computed, x.Computed}, {ledger.Committed, x.Committed}, {ledger.Snapshot, x.Snapshot}} {
		gauge(dIndex, float64(p.id), p.l.String())
	}
	for k := ledger.KindDeposit; int(k) < ledger.NumKinds; k++ {
		for f := ledger.OK; int(f) < ledger.NumFailReasons; f++ {
			counter(dTx, st.Outcomes[k][f], k.String(), f.String())
		}
	}
	for f := ledger.OK + 1; int(f) < ledger.NumFailReasons; f++ {
		counter(dFails, st.Fails(f), f.String())
	}
	counter(dSubmitted, st.Submitted)
	counter(dCommitted, st.Committed)
	counter(dBatches, st.WALBatches)
	counter(dWALBytes, st.WALBytes)
	ch <- constHistogram(dSync, &st.WALSyncTimes, 1e9)
	ch <- constHistogram(dGroup, &st.WALGroupSizes, 1)
	counter(dSyncs, st.Syncs)
	counter(dSnapshots, st.Snapshots)
	gauge(dSnapTx, float64(st.SnapshotTx))
	counter(dExpired, st.DedupExpired)
	gauge(dPLevel, float64(st.Pressure.Level))
	counter(dParks, st.Pressure.Parks)
	counter(dUnparks, st.Pressure.Unparks)
	counter(dYields, st.Pressure.Yields)
}

// constHistogram exports one of the ledger's fixed-bucket histograms,
// its bounds and sum divided by per (1e9: nanoseconds to seconds).
// The count is the sum of the buckets, so +Inf always agrees with it.
func constHistogram(d *prometheus.Desc, h *ledger.Histogram, per float64) prometheus.Metric {
	buckets := make(map[float64]uint64, ledger.HistogramBuckets)
	var cum uint64
	for i := range ledger.HistogramBuckets {
		cum += h.Counts[i]
		buckets[float64(h.Bound(i))/per] = cum
	}
	return prometheus.MustNewConstHistogram(d, cum+h.Counts[ledger.HistogramBuckets], float64(h.Sum)/per, buckets)
}

// statusWriter remembers the status code of a response.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countHTTP records a finished request by route and code.
func (m *metrics) countHTTP(route string, code int, took time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.httpReqs.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.httpTime.WithLabelValues(route).Observe(took.Seconds())
}
