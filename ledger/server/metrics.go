package server

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sync/atomic"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
)

// metrics are the server's counters; every field is updated atomically.
type metrics struct {
	accepted     atomic.Uint64
	rejected     atomic.Uint64
	idleClosed   atomic.Uint64
	slowClosed   atomic.Uint64
	badFrames    atomic.Uint64
	ops          atomic.Uint64 // ops submitted through TCP and HTTP
	httpReqs     atomic.Uint64
	httpRejected atomic.Uint64
	tlsFails     atomic.Uint64
	authFails    [2][3]atomic.Uint64 // [tcp, http][missing, invalid, forbidden]
	requests     [256]atomic.Uint64  // by wire.Type
	errors       [64]atomic.Uint64   // by wire.Code (the last slot collects larger codes)
	// fails counts the outcomes the server saw (SubmitWait and HTTP waits),
	// by kind and fail reason.
	fails [8][8]atomic.Uint64

	rate atomic.Uint64 // float64 bits: committed tx/s over the last sample
	last struct {
		at        time.Time
		committed ledger.TxID
	}
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
	m.fails[min(int(r.Kind), 7)][min(int(r.Fail), 7)].Add(1)
}

// sample updates the throughput gauge once a second until Shutdown.
func (s *Server) sample() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.sampler:
			return
		case now := <-t.C:
			x, err := s.l.Indexes()
			if err != nil {
				continue
			}
			m := &s.m
			if !m.last.at.IsZero() {
				dt := now.Sub(m.last.at).Seconds()
				r := float64(x.Committed-m.last.committed) / dt
				m.rate.Store(math.Float64bits(r))
			}
			m.last.at, m.last.committed = now, x.Committed
		}
	}
}

// writeMetrics writes the Prometheus text exposition format (version 0.0.4).
func (s *Server) writeMetrics(w io.Writer) error {
	b := bufio.NewWriter(w)
	m := &s.m
	family := func(name, typ, help string) {
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	x, xerr := s.l.Indexes()
	up := 1
	if xerr != nil {
		up = 0
	}
	family("ledger_up", "gauge", "1 if the ledger answers, 0 once it is closed or failed.")
	fmt.Fprintf(b, "ledger_up %d\n", up)
	family("ledger_index", "gauge", "Pipeline progress marks: the highest transaction id at each level.")
	for _, p := range []struct {
		l  string
		id ledger.TxID
	}{{"sequenced", x.Sequenced}, {"computed", x.Computed}, {"committed", x.Committed}, {"snapshot", x.Snapshot}} {
		fmt.Fprintf(b, "ledger_index{level=%q} %d\n", p.l, p.id)
	}
	family("ledger_index_lag", "gauge", "Transactions between consecutive pipeline levels.")
	fmt.Fprintf(b, "ledger_index_lag{from=\"sequenced\",to=\"computed\"} %d\n", x.Sequenced-x.Computed)
	fmt.Fprintf(b, "ledger_index_lag{from=\"computed\",to=\"committed\"} %d\n", x.Computed-x.Committed)
	fmt.Fprintf(b, "ledger_index_lag{from=\"committed\",to=\"snapshot\"} %d\n", x.Committed-x.Snapshot)
	family("ledger_committed_tx_per_second", "gauge", "Durable transactions per second over the last second.")
	fmt.Fprintf(b, "ledger_committed_tx_per_second %g\n", math.Float64frombits(m.rate.Load()))
	s.writeLedgerStats(b, family)
	family("ledger_server_ops_submitted_total", "counter", "Operations submitted through this server.")
	fmt.Fprintf(b, "ledger_server_ops_submitted_total %d\n", m.ops.Load())
	family("ledger_server_outcomes_total", "counter", "Outcomes of the transactions whose result this server waited for, by kind and fail reason.")
	for k := ledger.KindDeposit; k <= ledger.KindComposite; k++ {
		for f := ledger.OK; f <= ledger.Duplicate; f++ {
			fmt.Fprintf(b, "ledger_server_outcomes_total{kind=%q,reason=%q} %d\n", k.String(), f.String(), m.fails[k][f].Load())
		}
	}
	family("ledger_server_connections", "gauge", "Open binary-protocol connections.")
	fmt.Fprintf(b, "ledger_server_connections %d\n", s.open.Load())
	family("ledger_server_connections_total", "counter", "Binary-protocol connections by what happened to them.")
	fmt.Fprintf(b, "ledger_server_connections_total{event=\"accepted\"} %d\n", m.accepted.Load())
	fmt.Fprintf(b, "ledger_server_connections_total{event=\"rejected\"} %d\n", m.rejected.Load())
	fmt.Fprintf(b, "ledger_server_connections_total{event=\"idle_closed\"} %d\n", m.idleClosed.Load())
	fmt.Fprintf(b, "ledger_server_connections_total{event=\"slow_closed\"} %d\n", m.slowClosed.Load())
	family("ledger_server_requests_total", "counter", "Binary-protocol requests by type.")
	for t := wire.TypePing; t.IsRequest(); t++ {
		fmt.Fprintf(b, "ledger_server_requests_total{type=%q} %d\n", t.String(), m.requests[t].Load())
	}
	other := uint64(0)
	for t := range m.requests {
		if !wire.Type(t).IsRequest() {
			other += m.requests[t].Load()
		}
	}
	fmt.Fprintf(b, "ledger_server_requests_total{type=\"unknown\"} %d\n", other)
	family("ledger_server_bad_frames_total", "counter", "Frames that were oversized, truncated or did not decode.")
	fmt.Fprintf(b, "ledger_server_bad_frames_total %d\n", m.badFrames.Load())
	family("ledger_server_errors_total", "counter", "Error answers by wire error code.")
	for c := range m.errors {
		if v := m.errors[c].Load(); v != 0 {
			fmt.Fprintf(b, "ledger_server_errors_total{code=\"%d\"} %d\n", c, v)
		}
	}
	family("ledger_server_http_requests_total", "counter", "HTTP API requests.")
	fmt.Fprintf(b, "ledger_server_http_requests_total %d\n", m.httpReqs.Load())
	return b.Flush()
}

// writeLedgerStats writes the ledger-wide counters of ledger.Stats: every
// transaction the ledger executed since it was opened, whoever submitted
// it, and the work of its stages.
func (s *Server) writeLedgerStats(b *bufio.Writer, family func(name, typ, help string)) {
	st := s.l.Stats()
	family("ledger_transactions_total", "counter", "Transactions executed by the ledger since it was opened, by kind and outcome (reason \"ok\" or the fail reason).")
	for k := ledger.KindDeposit; k <= ledger.KindComposite; k++ {
		for f := ledger.OK; f <= ledger.Duplicate; f++ {
			fmt.Fprintf(b, "ledger_transactions_total{kind=%q,reason=%q} %d\n", k.String(), f.String(), st.Outcomes[k][f])
		}
	}
	family("ledger_fails_total", "counter", "Transactions rolled back since the ledger was opened, by fail reason (all kinds).")
	for f := ledger.InsufficientFunds; f <= ledger.Duplicate; f++ {
		fmt.Fprintf(b, "ledger_fails_total{reason=%q} %d\n", f.String(), st.Fails(f))
	}
	single := func(name, typ, help string, v any) {
		family(name, typ, help)
		fmt.Fprintf(b, "%s %v\n", name, v)
	}
	single("ledger_submitted_total", "counter", "Transactions sequenced since the ledger was opened.", st.Submitted)
	single("ledger_committed_total", "counter", "Transactions made durable since the ledger was opened.", st.Committed)
	single("ledger_wal_batches_total", "counter", "WAL group commits (one synced pebble write each).", st.WALBatches)
	single("ledger_wal_bytes_total", "counter", "Encoded bytes of the WAL batches.", st.WALBytes)
	single("ledger_wal_sync_seconds_total", "counter", "Time the WAL stage spent in synced commits.", st.WALSyncTime.Seconds())
	single("ledger_syncs_total", "counter", "Synced pebble commits: WAL batches plus snapshot manifests.", st.Syncs)
	single("ledger_snapshots_total", "counter", "Snapshots made durable since the ledger was opened (periodic and requested).", st.Snapshots)
	single("ledger_snapshot_persisted_tx", "gauge", "Last transaction covered by the newest durable snapshot (0: none).", st.SnapshotTx)
	single("ledger_pressure_level", "gauge", "Pressure level of the pipeline: 0 idle, 1 low, 2 high (stages without work park at any level after a short budget).", uint32(st.Pressure.Level))
	single("ledger_pressure_parks_total", "counter", "Times a pipeline stage parked.", st.Pressure.Parks)
	single("ledger_pressure_unparks_total", "counter", "Times a parked pipeline stage was woken.", st.Pressure.Unparks)
	single("ledger_pressure_yields_total", "counter", "Times a pipeline stage yielded its P.", st.Pressure.Yields)
}
