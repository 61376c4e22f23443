package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server/jsonapi"
	"github.com/lanework/lanework/ledger/wire"
)

// The reads of the history and query indexes and the batch lookups, on
// both APIs. Each runs on a worker (it reads pebble, and may wait for the
// index to reach wait_for); a wait_for above the Sequenced index is
// refused with not_found, as the wait request is: the server never waits
// for an id that may never come.

// doRead runs the read of type t with request r and returns the encoder of
// its answer.
func (s *Server) doRead(ctx context.Context, t wire.Type, r *wire.ReadRequest) (func(*wire.Encoder, uint64), any, error) {
	l := s.ledger()
	wait := r.Filter.WaitFor
	if t == wire.TypeLookupTransfers {
		wait = uint64(r.WaitFor)
	}
	if wait != 0 {
		x, err := l.Indexes()
		if err != nil {
			return nil, nil, err
		}
		if ledger.TxID(wait) > x.Sequenced {
			return nil, nil, fmt.Errorf("wait_for %d: %w", wait, ledger.ErrNotFound)
		}
	}
	switch t {
	case wire.TypeAccountTransfers:
		p, err := l.AccountTransfers(ctx, r.Account, r.Filter.AccountFilter())
		return func(e *wire.Encoder, id uint64) { e.AccountTransfersPage(id, &p) }, jsonapi.NewAccountTransfersPage(&p), err
	case wire.TypeAccountBalances:
		p, err := l.AccountBalances(ctx, r.Account, r.Filter.AccountFilter())
		return func(e *wire.Encoder, id uint64) { e.AccountBalancesPage(id, &p) }, jsonapi.NewAccountBalancesPage(&p), err
	case wire.TypeQueryTransfers:
		p, err := l.QueryTransfers(ctx, r.Filter.TransferFilter())
		return func(e *wire.Encoder, id uint64) { e.TransfersPage(id, &p) }, jsonapi.NewTransfersPage(&p), err
	case wire.TypeQueryAccounts:
		p, err := l.QueryAccounts(ctx, r.Filter.AccountQuery())
		return func(e *wire.Encoder, id uint64) { e.AccountsPage(id, &p) }, jsonapi.NewAccountsPage(&p), err
	case wire.TypeLookupAccounts:
		as, info, err := l.LookupAccounts(r.IDs)
		return func(e *wire.Encoder, id uint64) { e.AccountsFound(id, &info, as) }, jsonapi.NewAccountsFound(&info, as), err
	case wire.TypeLookupTransfers:
		ids := make([]ledger.TxID, len(r.IDs))
		for i, v := range r.IDs {
			ids[i] = ledger.TxID(v)
		}
		rs, info, err := l.LookupTransfers(ctx, ids, r.WaitFor)
		return func(e *wire.Encoder, id uint64) { e.TransfersFound(id, &info, rs) }, jsonapi.NewTransfersFound(&info, rs), err
	case wire.TypeBalanceAt:
		b, info, err := l.BalanceAt(ctx, r.Account, r.Tx)
		return func(e *wire.Encoder, id uint64) { e.BalanceIsAt(id, &info, &b) }, jsonapi.NewBalanceAt(&info, &b), err
	}
	return nil, nil, fmt.Errorf("%w: %v", wire.ErrUnknownType, t)
}

// readIndex answers a read request on a TCP connection.
func (c *conn) readIndex(id uint64, t wire.Type, r wire.ReadRequest) {
	c.waits.Add(1)
	c.s.workers.run(func() {
		defer c.waits.Done()
		enc, _, err := c.s.doRead(c.s.ctx, t, &r)
		if err != nil {
			c.fail(id, err)
			return
		}
		c.reply(response{id: id, enc: enc})
	})
}

// isReadPost reports whether r is a POST that only reads (queries and
// lookups, which take their arguments as a body): read_only suffices.
func isReadPost(r *http.Request) bool {
	switch r.URL.Path {
	case "/v1/query/transfers", "/v1/query/accounts", "/v1/lookup/accounts", "/v1/lookup/transfers":
		return true
	}
	return false
}

func (s *Server) readRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/accounts/{id}/transfers", s.handleAccountRead(wire.TypeAccountTransfers))
	mux.HandleFunc("GET /v1/accounts/{id}/balances", s.handleAccountRead(wire.TypeAccountBalances))
	mux.HandleFunc("GET /v1/accounts/{id}/balance_at", s.handleBalanceAt)
	mux.HandleFunc("POST /v1/query/transfers", s.handleBodyRead(wire.TypeQueryTransfers))
	mux.HandleFunc("POST /v1/query/accounts", s.handleBodyRead(wire.TypeQueryAccounts))
	mux.HandleFunc("POST /v1/lookup/accounts", s.handleBodyRead(wire.TypeLookupAccounts))
	mux.HandleFunc("POST /v1/lookup/transfers", s.handleBodyRead(wire.TypeLookupTransfers))
}

func (s *Server) answerRead(w http.ResponseWriter, r *http.Request, t wire.Type, req *wire.ReadRequest) {
	_, out, err := s.doRead(r.Context(), t, req)
	if err != nil {
		s.httpError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// handleAccountRead serves GET /v1/accounts/{id}/transfers and /balances:
// the filter is the query string, each field at most once, nothing else.
func (s *Server) handleAccountRead(t wire.Type) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req wire.ReadRequest
		var err error
		if req.Account, err = pathUint(r, "id"); err == nil {
			err = queryFilter(r, t, &req.Filter)
		}
		if err != nil {
			s.httpError(w, err)
			return
		}
		s.answerRead(w, r, t, &req)
	}
}

// handleBalanceAt serves GET /v1/accounts/{id}/balance_at?tx=N.
func (s *Server) handleBalanceAt(w http.ResponseWriter, r *http.Request) {
	var req wire.ReadRequest
	var err error
	if req.Account, err = pathUint(r, "id"); err == nil {
		var tx uint64
		tx, err = queryParams(r, []wire.FilterField{{Name: "tx", Kind: 'u', Max: 1<<64 - 1}}, func(string, uint64, bool, string) {}, "tx")
		req.Tx = ledger.TxID(tx)
	}
	if err != nil {
		s.httpError(w, err)
		return
	}
	s.answerRead(w, r, wire.TypeBalanceAt, &req)
}

// queryFilter reads t's filter from r's query string.
func queryFilter(r *http.Request, t wire.Type, f *wire.Filter) error {
	_, err := queryParams(r, wire.FilterFields(t), f.Set, "limit")
	return err
}

// queryParams parses r's query string strictly: only fields, each once,
// of its kind; required must be there. It returns required's value.
func queryParams(r *http.Request, fields []wire.FilterField, set func(string, uint64, bool, string), required string) (uint64, error) {
	var req uint64
	found := false
	for k, vs := range r.URL.Query() {
		i := -1
		for j := range fields {
			if fields[j].Name == k {
				i = j
			}
		}
		if i < 0 {
			return 0, fmt.Errorf("%w: query %.64s: unknown field", wire.ErrMalformed, k)
		}
		if len(vs) != 1 {
			return 0, fmt.Errorf("%w: query %s: repeated", wire.ErrMalformed, k)
		}
		v := vs[0]
		switch fields[i].Kind {
		case 'b':
			b, err := strconv.ParseBool(v)
			if err != nil {
				return 0, fmt.Errorf("%w: query %s: %q, want true or false", wire.ErrMalformed, k, v)
			}
			set(k, 0, b, "")
		case 'u':
			u, err := strconv.ParseUint(v, 10, 64)
			if err != nil || u > fields[i].Max {
				return 0, fmt.Errorf("%w: query %s: %.32q, want an integer in [0, %d]", wire.ErrMalformed, k, v, fields[i].Max)
			}
			set(k, u, false, "")
			if k == required {
				req = u
			}
		case 's':
			if len(v) > wire.MaxCursor {
				return 0, fmt.Errorf("%w: query %s: not a cursor", wire.ErrMalformed, k)
			}
			set(k, 0, false, v)
		}
		found = found || k == required
	}
	if !found {
		return 0, fmt.Errorf("%w: query %s: missing", wire.ErrMalformed, required)
	}
	return req, nil
}

// handleBodyRead serves the POST reads: a JSON object of the filter's
// fields (queries) or {"ids":[...]} ({"ids":[...],"wait_for":N} for
// transfers).
func (s *Server) handleBodyRead(t wire.Type) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.cfg.MaxFrame)))
		if err != nil {
			s.httpError(w, fmt.Errorf("%w: body: %v", wire.ErrMalformed, err))
			return
		}
		var req wire.ReadRequest
		if err := jsonReadRequest(body, t, &req); err != nil {
			s.httpError(w, err)
			return
		}
		s.answerRead(w, r, t, &req)
	}
}

// jsonReadRequest decodes a POST read's body strictly.
func jsonReadRequest(body []byte, t wire.Type, req *wire.ReadRequest) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	ms, err := readObject(dec, "body")
	if err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: body: trailing data", wire.ErrMalformed)
	}
	fields := wire.FilterFields(t)
	required := "limit"
	if t == wire.TypeLookupAccounts || t == wire.TypeLookupTransfers {
		fields = []wire.FilterField{{Name: "ids", Kind: 'a'}}
		if t == wire.TypeLookupTransfers {
			fields = append(fields, wire.FilterField{Name: "wait_for", Kind: 'u', Max: 1<<64 - 1})
		}
		required = "ids"
	}
	found := false
	for _, m := range ms {
		i := -1
		for j := range fields {
			if fields[j].Name == m.key {
				i = j
			}
		}
		if i < 0 {
			return fmt.Errorf("%w: body.%.64s: unknown field", wire.ErrMalformed, m.key)
		}
		found = found || m.key == required
		switch fields[i].Kind {
		case 'b':
			if string(m.val) != "true" && string(m.val) != "false" {
				return fmt.Errorf("%w: body.%s: %s, want a boolean", wire.ErrMalformed, m.key, rawKind(m.val))
			}
			req.Filter.Set(m.key, 0, string(m.val) == "true", "")
		case 'u':
			v, p := jsonUint(m.val)
			if p == "" && v > fields[i].Max {
				p = fmt.Sprintf("%d above %d", v, fields[i].Max)
			}
			if p != "" {
				return fmt.Errorf("%w: body.%s: %s", wire.ErrMalformed, m.key, p)
			}
			req.Filter.Set(m.key, v, false, "")
			if m.key == "wait_for" {
				req.WaitFor = ledger.TxID(v)
			}
		case 's':
			var s string
			if m.val[0] != '"' || json.Unmarshal(m.val, &s) != nil || len(s) > wire.MaxCursor {
				return fmt.Errorf("%w: body.%s: want a cursor string", wire.ErrMalformed, m.key)
			}
			req.Filter.Set(m.key, 0, false, s)
		case 'a':
			if req.IDs, err = jsonIDs(m.val); err != nil {
				return err
			}
		}
	}
	if !found {
		return fmt.Errorf("%w: body.%s: missing", wire.ErrMalformed, required)
	}
	return nil
}

func jsonIDs(raw json.RawMessage) ([]uint64, error) {
	if raw[0] != '[' {
		return nil, fmt.Errorf("%w: body.ids: %s, want an array", wire.ErrMalformed, rawKind(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%w: body.ids: %v", wire.ErrMalformed, err)
	}
	if len(items) > ledger.MaxReadLimit {
		return nil, fmt.Errorf("%w: body.ids: %d above %d", wire.ErrMalformed, len(items), ledger.MaxReadLimit)
	}
	ids := make([]uint64, len(items))
	for i, it := range items {
		v, p := jsonUint(it)
		if p != "" {
			return nil, fmt.Errorf("%w: body.ids[%d]: %s", wire.ErrMalformed, i, p)
		}
		ids[i] = v
	}
	return ids, nil
}
