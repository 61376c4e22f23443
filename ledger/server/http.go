package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server/jsonapi"
	"github.com/lanework/lanework/ledger/wire"
)

// Handler returns the HTTP/JSON API:
//
//	POST /v1/ops                     one op object or an array; ?wait=none|computed|committed|snapshot (default committed);
//	                                 a waited array answers {"first","last","results":[one result per op]}
//	GET  /v1/accounts/{id}           the account: {"id":1,"ledger":1,...,"debits_posted":..,"balance":..}
//	GET  /v1/accounts/{id}/balance   {"account":1,"balance":100}
//	GET  /v1/tx/{id}                 {"id":1,"status":"committed","result":{...}}
//	GET  /v1/indexes                 {"sequenced":..,"computed":..,"committed":..,"snapshot":..}
//	GET  /v1/status                  what the dashboard draws (dashboard.go)
//	GET  /, /dashboard/              the dashboard's static page, served without a token
//	POST /v1/snapshot                write a snapshot now; {"tx_id":..} once it is durable
//	GET  /v1/accounts/{id}/transfers ?limit=&debits=&credits=&timestamp_min=&timestamp_max=&reverse=&cursor=&wait_for=
//	GET  /v1/accounts/{id}/balances  the same filter: the account's columns after each transfer
//	GET  /v1/accounts/{id}/balance_at?tx=N   the columns after tx N
//	POST /v1/query/transfers         {"limit":..,"ledger":..,"timestamp_min":..,...}; read_only suffices
//	POST /v1/query/accounts          {"limit":..,"ledger":..,"code":..,"user_data_0":..,...}
//	POST /v1/lookup/accounts         {"ids":[...]}
//	POST /v1/lookup/transfers        {"ids":[...],"wait_for":N}
//	                                 (read.go; every read answers "as_of", "through" and "committed")
//	GET  /healthz                    200 "ok", or 503 once the ledger is closed or failed
//	GET  /readyz                     200 "ready" once the server serves a recovered ledger, else 503
//	GET  /metrics                    Prometheus exposition (client_golang)
//	     /debug/pprof/               runtime profiles, with Config.Pprof
//
// Errors are {"error":"...","code":N,"index":I} with the wire error code.
// With Config.Tokens every route but /healthz and /readyz needs a bearer
// token: read_only for GET, read_write for POST and /debug/.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/ops", s.handleOps)
	mux.HandleFunc("GET /v1/accounts/{id}", s.handleAccount)
	mux.HandleFunc("GET /v1/accounts/{id}/balance", s.handleBalance)
	mux.HandleFunc("GET /v1/tx/{id}", s.handleTx)
	mux.HandleFunc("GET /v1/indexes", s.handleIndexes)
	mux.HandleFunc("POST /v1/snapshot", s.handleSnapshot)
	s.readRoutes(mux) // read.go
	mux.HandleFunc("GET /healthz", s.handleHealth)
	mux.HandleFunc("GET /readyz", s.handleReady)
	mux.Handle("GET /metrics", s.metricsHandler())
	s.dashboardRoutes(mux)
	if s.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	log := s.cfg.Logger
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		_, pattern := mux.Handler(r)
		route := pattern[strings.IndexByte(pattern, ' ')+1:] // the path of "METHOD /path"
		sw := &statusWriter{ResponseWriter: w}
		if s.authorizeHTTP(sw, r) {
			mux.ServeHTTP(sw, r)
		}
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		took := time.Since(start)
		s.m.countHTTP(route, sw.code, took)
		if log.Enabled(r.Context(), slog.LevelDebug) {
			log.LogAttrs(r.Context(), slog.LevelDebug, "http request", slog.String("method", r.Method),
				slog.String("path", r.URL.Path), slog.String("route", route), slog.Int("status", sw.code),
				slog.Duration("took", took), slog.String("remote", r.RemoteAddr))
		}
	})
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	if _, err := s.ledger().Indexes(); err != nil || !s.ready.Load() || s.isClosing() {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ready\n")
}

// authorizeHTTP checks the request's bearer token against the scope its
// route needs: probes and the dashboard's static files need none, writes (POST) and /debug/ need
// read_write, the rest read_only. It answers 401 or 403 itself.
func (s *Server) authorizeHTTP(w http.ResponseWriter, r *http.Request) bool {
	if s.auth == nil || r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || isDashboardPath(r) {
		return true
	}
	need := ReadOnly
	if r.Method == http.MethodPost && !isReadPost(r) || strings.HasPrefix(r.URL.Path, "/debug/") {
		need = ReadWrite
	}
	reason := s.auth.AuthorizeHTTP(r, need)
	if reason == "" {
		return true
	}
	s.authFailed("http", reason, r.RemoteAddr, r.URL.Path)
	if reason == authForbidden {
		writeJSON(w, http.StatusForbidden, jsonapi.Error{Error: wire.ErrForbidden.Error(), Code: uint16(wire.CodeForbidden)})
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="ledger"`)
	writeJSON(w, http.StatusUnauthorized, jsonapi.Error{Error: wire.ErrUnauthorized.Error() + ": " + reason + " token", Code: uint16(wire.CodeUnauthorized)})
	return false
}

// authFailed counts and logs a failed authentication: who, why and what,
// never the token.
func (s *Server) authFailed(proto, reason, remote, what string) {
	s.m.authFailure(proto, reason)
	s.cfg.Logger.Warn("ledger server: authentication failed", "proto", proto, "reason", reason, "remote", remote, "request", what)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) httpError(w http.ResponseWriter, err error) {
	we := s.wireErr(ctxErr(err))
	s.m.errors[min(int(we.Code), len(s.m.errors)-1)].Add(1)
	status := http.StatusInternalServerError
	switch {
	case we.Code == wire.CodeMalformed || we.Code == wire.CodeTooLarge || we.Code == wire.CodeLevel || we.Code.IsInput():
		status = http.StatusBadRequest
		if we.Code == wire.CodeTooLarge {
			status = http.StatusRequestEntityTooLarge
		}
	case we.Code == wire.CodeFilter || we.Code == wire.CodeNoHistory:
		status = http.StatusBadRequest
	case we.Code == wire.CodeNotFound || we.Code == wire.CodeAccountNotFound:
		status = http.StatusNotFound
	case we.Code == wire.CodeIndexOff:
		status = http.StatusNotImplemented
	case we.Code == wire.CodeNotCommitted:
		status = http.StatusConflict
	case we.Code == wire.CodeClosed || we.Code == wire.CodeFailed || we.Code == wire.CodeShutdown:
		status = http.StatusServiceUnavailable
	case we.Code == wire.CodeNotLeader:
		status = http.StatusMisdirectedRequest
	}
	writeJSON(w, status, jsonapi.Error{Error: err.Error(), Code: uint16(we.Code), Index: we.Index})
}

func parseLevel(s string) (ledger.Level, error) {
	switch s {
	case "", "committed":
		return ledger.Committed, nil
	case "none", "sequenced":
		return ledger.Sequenced, nil
	case "computed":
		return ledger.Computed, nil
	case "snapshot":
		return ledger.Snapshot, nil
	}
	return 0, ledger.ErrLevel
}

func (s *Server) handleOps(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	level, err := parseLevel(r.URL.Query().Get("wait"))
	if err != nil {
		s.httpError(w, err)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxFrame)))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			err = wire.ErrFrameTooLarge
		}
		s.httpError(w, err)
		return
	}
	ops, single, err := parseOps(body)
	if err != nil {
		s.httpError(w, err)
		return
	}
	if len(ops) == 0 || len(ops) > s.cfg.MaxBatch {
		s.httpError(w, &ledger.InputError{Err: ledger.ErrBatchSize})
		return
	}
	if single && level >= ledger.Computed {
		res, err := s.ledger().SubmitAndWait(r.Context(), ops[0], level)
		if err != nil {
			s.httpError(w, err)
			return
		}
		s.m.ops.Add(1)
		s.m.observe(&res)
		s.m.observeWait(level, start)
		writeJSON(w, http.StatusOK, jsonapi.NewResult(&res))
		return
	}
	if !single && level >= ledger.Computed {
		// A waited batch answers every op's result.
		res, err := s.ledger().SubmitBatchAndWait(r.Context(), ops, level)
		if err != nil {
			s.httpError(w, err)
			return
		}
		s.m.ops.Add(uint64(len(ops)))
		for i := range res {
			s.m.observe(&res[i])
		}
		s.m.observeWait(level, start)
		writeJSON(w, http.StatusOK, jsonapi.NewBatch(res))
		return
	}
	first, last, err := s.ledger().SubmitBatch(ops)
	if err != nil {
		s.httpError(w, err)
		return
	}
	s.m.ops.Add(uint64(len(ops)))
	if single {
		writeJSON(w, http.StatusAccepted, map[string]ledger.TxID{"id": first})
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]ledger.TxID{"first": first, "last": last})
}

func pathUint(r *http.Request, name string) (uint64, error) {
	v, err := strconv.ParseUint(r.PathValue(name), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: path %s: %v", wire.ErrMalformed, name, err)
	}
	return v, nil
}

func (s *Server) handleBalance(w http.ResponseWriter, r *http.Request) {
	id, err := pathUint(r, "id")
	if err != nil {
		s.httpError(w, err)
		return
	}
	b, err := s.ledger().Balance(id)
	if err != nil {
		s.httpError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, jsonapi.Balance{Account: id, Balance: b})
}

func (s *Server) handleAccount(w http.ResponseWriter, r *http.Request) {
	id, err := pathUint(r, "id")
	if err != nil {
		s.httpError(w, err)
		return
	}
	a, err := s.ledger().Lookup(id)
	if err != nil {
		s.httpError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, jsonapi.NewAccount(&a, true))
}

func (s *Server) handleTx(w http.ResponseWriter, r *http.Request) {
	id, err := pathUint(r, "id")
	if err != nil {
		s.httpError(w, err)
		return
	}
	lv, err := s.ledger().Status(ledger.TxID(id))
	if err != nil {
		s.httpError(w, err)
		return
	}
	if lv == ledger.Unknown {
		s.httpError(w, ledger.ErrNotFound)
		return
	}
	out := jsonapi.Tx{ID: id, Status: lv.String()}
	if lv >= ledger.Committed {
		res, err := s.ledger().Result(ledger.TxID(id))
		if err != nil {
			s.httpError(w, err)
			return
		}
		out.Result = jsonapi.NewResult(&res)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleIndexes(w http.ResponseWriter, r *http.Request) {
	x, err := s.ledger().Indexes()
	if err != nil {
		s.httpError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, jsonapi.Indexes(x))
}

func (s *Server) handleSnapshot(w http.ResponseWriter, r *http.Request) {
	tx, _, err := s.snap.do(r.Context(), s.ledger(), s.ctx)
	if err != nil {
		s.httpError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, jsonapi.Snapshot{TxID: tx})
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if _, err := s.ledger().Indexes(); err != nil || s.isClosing() {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n")
}
