// Package jsonapi is the JSON of the ledger's HTTP API (ledger/server): a
// type per answer, and the conversion from the ledger's own types. The
// server writes these; the ledger command's --json prints the same ones, so
// a script can move between the two without a change.
//
// Field names are snake_case, ids and amounts are JSON numbers, flags are
// lists of their snake_case names. A read's answer embeds Read: the
// transaction it is as of.
package jsonapi

import "github.com/lanework/lanework/ledger"

// Entry is one entry of a result: Column of Account moved by Delta to Value.
type Entry struct {
	Account uint64 `json:"account"`
	Column  string `json:"column"`
	Delta   int64  `json:"delta"`
	Value   int64  `json:"value"`
}

// Result is a transaction's outcome (GET /v1/tx/{id}'s "result", the
// answer to a waited submit).
type Result struct {
	ID        ledger.TxID   `json:"id"`
	Kind      string        `json:"kind"`
	Fail      string        `json:"fail"`
	UserRef   uint64        `json:"user_ref,omitempty"`
	DupOf     ledger.TxID   `json:"dup_of,omitempty"`
	Timestamp int64         `json:"timestamp"`
	Entries   []Entry       `json:"entries"`
	Account   *Account      `json:"account,omitempty"`  // create_account
	Transfer  *Transfer     `json:"transfer,omitempty"` // transfer, not a duplicate
	Expired   []ledger.TxID `json:"expired,omitempty"`  // pending transfers released before it
}

// Transfer is a transfer's fields in a Result.
type Transfer struct {
	Ledger    uint32      `json:"ledger"`
	Code      uint16      `json:"code"`
	Flags     []string    `json:"flags"`
	UserData  uint64      `json:"user_data"`
	PendingID ledger.TxID `json:"pending_id,omitempty"`
	Timeout   uint32      `json:"timeout,omitempty"`
}

// Account is an account; its columns and balance only from a lookup or a
// query, not in a create_account's Result.
type Account struct {
	ID             uint64    `json:"id"`
	Ledger         uint32    `json:"ledger"`
	Code           uint16    `json:"code"`
	Flags          []string  `json:"flags"`
	UserData       [2]uint64 `json:"user_data"`
	DebitsPosted   *uint64   `json:"debits_posted,omitempty"`
	CreditsPosted  *uint64   `json:"credits_posted,omitempty"`
	DebitsPending  *uint64   `json:"debits_pending,omitempty"`
	CreditsPending *uint64   `json:"credits_pending,omitempty"`
	Balance        *int64    `json:"balance,omitempty"`
}

// NewAccount converts a; columns says whether to include its columns and
// balance.
func NewAccount(a *ledger.Account, columns bool) *Account {
	j := &Account{ID: a.ID, Ledger: a.Ledger, Code: a.Code, Flags: a.Flags.Names(), UserData: a.UserData}
	if columns {
		b := a.Balance()
		dp, cp, dn, cn := a.DebitsPosted, a.CreditsPosted, a.DebitsPending, a.CreditsPending
		j.DebitsPosted, j.CreditsPosted, j.DebitsPending, j.CreditsPending, j.Balance = &dp, &cp, &dn, &cn, &b
	}
	return j
}

// NewResult converts r.
func NewResult(r *ledger.Result) *Result {
	j := &Result{ID: r.ID, Kind: r.Kind.String(), Fail: r.Fail.String(), UserRef: r.UserRef,
		DupOf: r.DupOf, Timestamp: r.Timestamp, Entries: make([]Entry, len(r.Entries)), Expired: r.Expired}
	for i, e := range r.Entries {
		j.Entries[i] = Entry{Account: e.Account, Column: e.Column.String(), Delta: e.Delta, Value: e.Value}
	}
	if r.Account != nil {
		j.Account = NewAccount(r.Account, false)
	}
	if r.Kind == ledger.KindTransfer && r.Fail != ledger.Duplicate {
		j.Transfer = &Transfer{Ledger: r.Ledger, Code: r.Code, Flags: r.Flags.Names(), UserData: r.UserData,
			PendingID: r.PendingID, Timeout: r.Timeout}
	}
	return j
}

// Tx is GET /v1/tx/{id}: a transaction's status, and its result once
// committed.
type Tx struct {
	ID     uint64  `json:"id"`
	Status string  `json:"status"`
	Result *Result `json:"result,omitempty"`
}

// Batch is the answer to a waited batch: its ids and every op's result.
type Batch struct {
	First   ledger.TxID `json:"first"`
	Last    ledger.TxID `json:"last"`
	Results []*Result   `json:"results"`
}

// NewBatch converts the results of a waited batch (at least one).
func NewBatch(res []ledger.Result) Batch {
	out := Batch{First: res[0].ID, Last: res[len(res)-1].ID, Results: make([]*Result, len(res))}
	for i := range res {
		out.Results[i] = NewResult(&res[i])
	}
	return out
}

// Balance is GET /v1/accounts/{id}/balance: an account's balance now.
type Balance struct {
	Account uint64 `json:"account"`
	Balance int64  `json:"balance"`
}

// Indexes are the ledger's four indexes.
type Indexes struct {
	Sequenced ledger.TxID `json:"sequenced"`
	Computed  ledger.TxID `json:"computed"`
	Committed ledger.TxID `json:"committed"`
	Snapshot  ledger.TxID `json:"snapshot"`
}

// Snapshot is POST /v1/snapshot: the transaction the snapshot holds.
type Snapshot struct {
	TxID ledger.TxID `json:"tx_id"`
}

// Error is every error answer: the message, the wire code, and for a
// batch the index of the op at fault.
type Error struct {
	Error string `json:"error"`
	Code  uint16 `json:"code"`
	Index int    `json:"index,omitempty"`
}
