package ledgercluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server"
)

// Handler serves a replica's client API over HTTP/JSON:
//
//	POST /v1/ops             {"kind":"deposit|withdrawal|transfer", "account", "from", "to",
//	                          "amount", "user_ref", "level":"computed|replicated|committed|snapshot"}
//	                         -> 200 {"id","fail"}; 421 {"error":"not_leader","leader":addr}
//	GET  /v1/balance/{acct}  -> {"balance","applied","behind"}: as of the replica's applied tx,
//	                            behind the last tx it knows raft committed by "behind";
//	                            ?linearizable=true: through raft's ReadIndex, leader only (421 else)
//	GET  /v1/status          -> Status
//	GET  /v1/members         -> []Member: the address book and raft's voters
//	POST /v1/members         {"id","raft","client","tcp"} -> 200 once the replica is added (leader only, 421 else)
//	DELETE /v1/members/{id}  -> 200 once the replica is removed (leader only, 421 else)
//	GET  /metrics            -> Prometheus gauges (applied, replicated, leader, WAL hash)
//
// Requests are decoded strictly (an unknown field is a 400 naming it). A
// client retries a 421 or 503 on the leader named, with the same user_ref:
// the leader's idempotency index makes the retry exactly-once. With
// Config.Tokens every request needs a bearer token (the ledger server's
// rules: read_only for GET, read_write else; 401 or 403 otherwise).
func Handler(n *Node) http.Handler {
	h := routes(n)
	if n.auth == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		need := server.ReadWrite
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			need = server.ReadOnly
		}
		switch reason := n.auth.AuthorizeHTTP(r, need); reason {
		case "":
			h.ServeHTTP(w, r)
		case "forbidden":
			writeJSON(w, http.StatusForbidden, OpResponse{Error: "forbidden: a read_only token"})
		default:
			n.log.Warn("client request refused", "reason", reason, "remote", r.RemoteAddr, "path", r.URL.Path)
			w.Header().Set("WWW-Authenticate", `Bearer realm="ledger"`)
			writeJSON(w, http.StatusUnauthorized, OpResponse{Error: "unauthorized: " + reason + " token"})
		}
	})
}

func routes(n *Node) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/ops", n.handleOp)
	mux.HandleFunc("GET /v1/balance/{account}", n.handleBalance)
	mux.Handle("GET /metrics", metricsHandler(n))
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, n.Status()) })
	mux.HandleFunc("GET /v1/members", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, n.Members()) })
	mux.HandleFunc("POST /v1/members", n.handleAdd)
	mux.HandleFunc("DELETE /v1/members/{id}", n.handleRemove)
	return mux
}

func (n *Node) handleAdd(w http.ResponseWriter, r *http.Request) {
	var m Member
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<12))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		writeJSON(w, http.StatusBadRequest, OpResponse{Error: "bad request: " + err.Error()})
		return
	}
	n.answerConf(w, n.AddReplica(r.Context(), m))
}

func (n *Node) handleRemove(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, OpResponse{Error: "id: " + err.Error()})
		return
	}
	n.answerConf(w, n.RemoveReplica(r.Context(), id))
}

func (n *Node) answerConf(w http.ResponseWriter, err error) {
	var nl *ledger.NotLeaderError
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, n.Members())
	case errors.As(err, &nl):
		writeJSON(w, http.StatusMisdirectedRequest, OpResponse{Error: "not_leader", Leader: nl.Leader})
	case errors.Is(err, ErrConfig):
		writeJSON(w, http.StatusBadRequest, OpResponse{Error: err.Error()})
	default:
		writeJSON(w, http.StatusServiceUnavailable, OpResponse{Error: err.Error()})
	}
}

// OpRequest is the body of POST /v1/ops.
type OpRequest struct {
	Kind    string `json:"kind"`
	Account uint64 `json:"account"`          // create_account: the account's id
	Ledger  uint32 `json:"ledger,omitempty"` // create_account
	From    uint64 `json:"from"`
	To      uint64 `json:"to"`
	Amount  uint64 `json:"amount"`
	UserRef uint64 `json:"user_ref"`
	Level   string `json:"level"`
}

// OpResponse answers POST /v1/ops.
type OpResponse struct {
	ID     ledger.TxID `json:"id,omitempty"`
	Fail   string      `json:"fail,omitempty"`
	DupOf  ledger.TxID `json:"dup_of,omitempty"`
	Error  string      `json:"error,omitempty"`
	Leader string      `json:"leader,omitempty"`
}

// Status is a replica's view: its role, raft's leader, and how far its
// ledger is (a follower's reads are as of Applied).
type Status struct {
	NodeID     uint64      `json:"node_id"`
	Leader     uint64      `json:"leader"`
	Leading    bool        `json:"leading"`   // the ledger is a leader and takes submits
	Applied    ledger.TxID `json:"applied"`   // last tx in the replica's WAL
	Sequenced  ledger.TxID `json:"sequenced"` // a leader: last tx with an id, durable or not
	Replicated ledger.TxID `json:"replicated"`
	// Committed is the last transaction raft committed, as this replica
	// knows from its log; Applied lags it by what it has still to apply.
	Committed ledger.TxID `json:"committed"`
	Hash      string      `json:"hash"`
	Error     string      `json:"error,omitempty"`
	hash      uint64
}

// Status returns the replica's status.
func (n *Node) Status() Status {
	l := n.Ledger()
	st := l.Stats()
	s := Status{NodeID: n.cfg.NodeID, Leader: n.Leader(), Leading: !st.Follower && !st.Failed && !st.Closed,
		Applied: st.Indexes.Committed, Sequenced: st.Indexes.Sequenced, Replicated: st.Replicated, Hash: fmt.Sprintf("%016x", st.Hash), hash: st.Hash,
		Committed: max(ledger.TxID(n.knownTx.Load()), st.Indexes.Committed)}
	if err := n.Err(); err != nil {
		s.Error = err.Error()
	}
	return s
}

var levels = map[string]ledger.Level{"": ledger.Replicated, "computed": ledger.Computed, "replicated": ledger.Replicated,
	"committed": ledger.Committed, "snapshot": ledger.Snapshot}

func (n *Node) handleOp(w http.ResponseWriter, r *http.Request) {
	var req OpRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, OpResponse{Error: "bad request: " + err.Error()})
		return
	}
	var op ledger.Op
	switch req.Kind {
	case "create_account":
		op = ledger.CreateAccount{ID: req.Account, Ledger: req.Ledger, UserRef: req.UserRef}
	case "deposit":
		op = ledger.Deposit{Account: req.Account, Amount: req.Amount, UserRef: req.UserRef}
	case "withdrawal":
		op = ledger.Withdrawal{Account: req.Account, Amount: req.Amount, UserRef: req.UserRef}
	case "transfer":
		op = ledger.Transfer{From: req.From, To: req.To, Amount: req.Amount, UserRef: req.UserRef}
	default:
		writeJSON(w, http.StatusBadRequest, OpResponse{Error: fmt.Sprintf("kind: %q is not create_account, deposit, withdrawal or transfer", req.Kind)})
		return
	}
	lv, ok := levels[req.Level]
	if !ok {
		writeJSON(w, http.StatusBadRequest, OpResponse{Error: fmt.Sprintf("level: %q is not computed, replicated, committed or snapshot", req.Level)})
		return
	}
	res, err := n.SubmitAndWait(r.Context(), op, lv)
	var nl *ledger.NotLeaderError
	var in *ledger.InputError
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, OpResponse{ID: res.ID, Fail: res.Fail.String(), DupOf: res.DupOf})
	case errors.As(err, &nl):
		writeJSON(w, http.StatusMisdirectedRequest, OpResponse{Error: "not_leader", Leader: nl.Leader})
	case errors.As(err, &in):
		writeJSON(w, http.StatusBadRequest, OpResponse{Error: err.Error()})
	default: // closed while the ledger changed role, or failed: outcome unknown, retry
		writeJSON(w, http.StatusServiceUnavailable, OpResponse{Error: err.Error()})
	}
}

// SubmitAndWait submits op on the replica's ledger and waits for level.
// On a follower it fails with *ledger.NotLeaderError; an error after the
// submit (the replica stopped leading) leaves the outcome unknown: retry
// on the leader with the same UserRef.
func (n *Node) SubmitAndWait(ctx context.Context, op ledger.Op, level ledger.Level) (ledger.Result, error) {
	return n.Ledger().SubmitAndWait(ctx, op, level)
}

func (n *Node) handleBalance(w http.ResponseWriter, r *http.Request) {
	a, err := strconv.ParseUint(r.PathValue("account"), 10, 64)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "account: " + err.Error()})
		return
	}
	if r.URL.Query().Get("linearizable") == "true" {
		b, err := n.ReadBalance(r.Context(), a)
		var nl *ledger.NotLeaderError
		switch {
		case errors.As(err, &nl):
			writeJSON(w, http.StatusMisdirectedRequest, OpResponse{Error: "not_leader", Leader: nl.Leader})
		case err != nil:
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		default:
			writeJSON(w, http.StatusOK, map[string]int64{"balance": b})
		}
		return
	}
	l := n.Ledger()
	applied := l.Stats().Indexes.Snapshot // loaded first: the balance is at least as new
	b, err := l.Balance(a)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	// behind: transactions raft committed, as this replica knows, that
	// the balance does not reflect yet.
	behind := max(int64(n.knownTx.Load())-int64(applied), 0)
	writeJSON(w, http.StatusOK, map[string]int64{"balance": b, "applied": int64(applied), "behind": behind})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
