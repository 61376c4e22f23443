package server

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server/jsonapi"
	"github.com/lanework/lanework/pressure"
)

// The dashboard is a static page, embedded in the binary, that draws the
// server's state from the JSON API: GET /v1/status once a second for the
// live view, and the balance, transaction and ops routes for its forms.
// It fetches nothing from anywhere but this server.
//
// Auth: the page and its assets (GET / and /dashboard/...) are served
// without a token, because a browser cannot send a bearer header when it
// first loads a page, and they hold no data: they are the same bytes for
// everyone. Every request the page makes for data goes to the API with
// "Authorization: Bearer TOKEN", under the API's scopes (read_only to
// look, read_write to submit). The page takes the token from a field, or
// from the URL fragment (/#token=SECRET: a fragment is never sent to the
// server, so it is in no access log), removes it from the address bar and
// keeps it in memory only: a reload asks again.

//go:embed dashboard
var dashboardFiles embed.FS

// dashboardFS holds index.html, app.js and style.css.
var dashboardFS, _ = fs.Sub(dashboardFiles, "dashboard")

// dashboardCSP forbids the page any origin but its own: no CDN, no inline
// script, no third-party fetch.
const dashboardCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// isDashboardPath reports whether r asks for the dashboard's static files,
// which need no token (see above).
func isDashboardPath(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	return r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/dashboard/")
}

func (s *Server) dashboardRoutes(mux *http.ServeMux) {
	files := http.FileServerFS(dashboardFS)
	static := func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", dashboardCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}
	mux.HandleFunc("GET /{$}", static)
	mux.Handle("GET /dashboard/", http.StripPrefix("/dashboard", http.HandlerFunc(static)))
	mux.HandleFunc("GET /v1/status", s.handleStatus)
}

// jsonStatus is GET /v1/status: everything the dashboard draws, from one
// ledger.Stats (a few dozen atomic loads) and the server's own counters.
// Values are counts, sums and levels since the ledger was opened; the page
// turns them into rates by differencing successive polls.
type jsonStatus struct {
	TimeMs    int64           `json:"time_ms"` // server clock, Unix milliseconds
	Up        bool            `json:"up"`
	Closed    bool            `json:"closed"`
	Failed    bool            `json:"failed"`
	Indexes   jsonapi.Indexes `json:"indexes"`
	Recovered ledger.TxID     `json:"recovered"`
	Submitted uint64          `json:"submitted"`
	Committed uint64          `json:"committed"`
	WAL       struct {
		Batches uint64 `json:"batches"`
		Bytes   uint64 `json:"bytes"`
		SyncNs  int64  `json:"sync_ns"`
		Syncs   uint64 `json:"syncs"`
		// SyncHist is the distribution of sync times: Counts[i] syncs
		// took at most FirstNs<<i (the last count: longer), not
		// cumulative, so the page can difference two polls.
		SyncHist struct {
			FirstNs uint64   `json:"first_ns"`
			Counts  []uint64 `json:"counts"`
		} `json:"sync_hist"`
	} `json:"wal"`
	Snapshots  uint64      `json:"snapshots"`
	SnapshotTx ledger.TxID `json:"snapshot_tx"`
	// Outcomes counts the executed transactions by outcome, over all
	// kinds: "ok" and each fail reason, in the ledger's order.
	Outcomes []jsonCount `json:"outcomes"`
	// Pressure is the pipeline's one pressure level (the manager keeps a
	// single level for all its stages), its stages' waits in sum, and
	// each stage's.
	Pressure struct {
		Level    string           `json:"level"`
		Stages   int              `json:"stages"`
		Spinning int              `json:"spinning"`
		Parks    uint64           `json:"parks"`
		Unparks  uint64           `json:"unparks"`
		Yields   uint64           `json:"yields"`
		PerStage []jsonStageStats `json:"per_stage"`
	} `json:"pressure"`
	Server struct {
		Conns     int64  `json:"conns"`
		HTTPConns int64  `json:"http_conns"`
		Ops       uint64 `json:"ops"`
	} `json:"server"`
	// HistoryIndex: the ledger keeps the history and query indexes
	// (ledger.Config.Index, serve --index), so its history reads answer.
	HistoryIndex bool `json:"history_index"`
}

type jsonStageStats struct {
	Name    string `json:"name"`
	Parked  bool   `json:"parked"`
	Parks   uint64 `json:"parks"`
	Unparks uint64 `json:"unparks"`
	Yields  uint64 `json:"yields"`
}

type jsonCount struct {
	Name  string `json:"name"`
	Count uint64 `json:"count"`
}

func (s *Server) status() *jsonStatus {
	st := s.ledger().Stats()
	j := &jsonStatus{TimeMs: time.Now().UnixMilli(), Up: !st.Closed && !st.Failed, Closed: st.Closed, Failed: st.Failed,
		Indexes: jsonapi.Indexes(st.Indexes), Recovered: st.Recovered, Submitted: st.Submitted, Committed: st.Committed,
		Snapshots: st.Snapshots, SnapshotTx: st.SnapshotTx, HistoryIndex: s.ledger().IndexStats().On}
	j.WAL.Batches, j.WAL.Bytes, j.WAL.SyncNs, j.WAL.Syncs = st.WALBatches, st.WALBytes, int64(st.WALSyncTime), st.Syncs
	j.WAL.SyncHist.FirstNs, j.WAL.SyncHist.Counts = st.WALSyncTimes.First, st.WALSyncTimes.Counts[:]
	for f := ledger.OK; int(f) < ledger.NumFailReasons; f++ {
		j.Outcomes = append(j.Outcomes, jsonCount{f.String(), st.Fails(f)})
	}
	p := st.Pressure
	j.Pressure.Level, j.Pressure.Stages, j.Pressure.Spinning = p.Level.String(), p.Stages, p.Spinning
	j.Pressure.Parks, j.Pressure.Unparks, j.Pressure.Yields = p.Parks, p.Unparks, p.Yields
	for _, ps := range s.ledger().StageStats(make([]pressure.StageStats, 0, 3)) {
		j.Pressure.PerStage = append(j.Pressure.PerStage, jsonStageStats(ps))
	}
	j.Server.Conns, j.Server.HTTPConns, j.Server.Ops = s.open.Load(), s.httpOpen.Load(), s.m.ops.Load()
	return j
}

// handleStatus answers even once the ledger is closed or failed: that is
// when a person most wants to look.
func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, s.status())
}
