package main

import (
	"encoding/json"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/ledger"
)

// The --json output of the commands uses the field names of the HTTP API
// (ledger/server), so a script can switch between the two; TestJSONMatchesHTTP
// holds them together.

func jsonFlag() *cli.BoolFlag {
	return &cli.BoolFlag{Name: "json", EnvVars: []string{"LEDGER_JSON"}, Usage: "print the result as JSON (the HTTP API's fields)"}
}

type jsonBalance struct {
	Account uint64 `json:"account"`
	Balance int64  `json:"balance"`
}

type jsonEntry struct {
	Account uint64 `json:"account"`
	Column  string `json:"column"`
	Delta   int64  `json:"delta"`
	Value   int64  `json:"value"`
}

type jsonResult struct {
	ID        ledger.TxID   `json:"id"`
	Kind      string        `json:"kind"`
	Fail      string        `json:"fail"`
	UserRef   uint64        `json:"user_ref,omitempty"`
	DupOf     ledger.TxID   `json:"dup_of,omitempty"`
	Timestamp int64         `json:"timestamp"`
	Entries   []jsonEntry   `json:"entries"`
	Account   *jsonAccount  `json:"account,omitempty"`
	Transfer  *jsonTransfer `json:"transfer,omitempty"`
	Expired   []ledger.TxID `json:"expired,omitempty"`
}

// jsonTransfer is a transfer's fields in a result.
type jsonTransfer struct {
	Ledger    uint32      `json:"ledger"`
	Code      uint16      `json:"code"`
	Flags     []string    `json:"flags"`
	UserData  uint64      `json:"user_data"`
	PendingID ledger.TxID `json:"pending_id,omitempty"`
	Timeout   uint32      `json:"timeout,omitempty"`
}

// jsonAccount is an account; the columns and balance only from a lookup.
type jsonAccount struct {
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

func toJSONAccount(a *ledger.Account, columns bool) *jsonAccount {
	j := &jsonAccount{ID: a.ID, Ledger: a.Ledger, Code: a.Code, Flags: a.Flags.Names(), UserData: a.UserData}
	if columns {
		b := a.Balance()
		j.DebitsPosted, j.CreditsPosted, j.DebitsPending, j.CreditsPending, j.Balance = &a.DebitsPosted, &a.CreditsPosted, &a.DebitsPending, &a.CreditsPending, &b
	}
	return j
}

func toJSONResult(r *ledger.Result) *jsonResult {
	j := &jsonResult{ID: r.ID, Kind: r.Kind.String(), Fail: r.Fail.String(), UserRef: r.UserRef,
		DupOf: r.DupOf, Timestamp: r.Timestamp, Entries: make([]jsonEntry, len(r.Entries)), Expired: r.Expired}
	if r.Kind == ledger.KindTransfer && r.Fail != ledger.Duplicate {
		j.Transfer = &jsonTransfer{Ledger: r.Ledger, Code: r.Code, Flags: r.Flags.Names(), UserData: r.UserData,
			PendingID: r.PendingID, Timeout: r.Timeout}
	}
	for i, e := range r.Entries {
		j.Entries[i] = jsonEntry{Account: e.Account, Column: e.Column.String(), Delta: e.Delta, Value: e.Value}
	}
	if r.Account != nil {
		j.Account = toJSONAccount(r.Account, false)
	}
	return j
}

type jsonTx struct {
	ID     uint64      `json:"id"`
	Status string      `json:"status"`
	Result *jsonResult `json:"result,omitempty"`
}

type jsonIndexes struct {
	Sequenced ledger.TxID `json:"sequenced"`
	Computed  ledger.TxID `json:"computed"`
	Committed ledger.TxID `json:"committed"`
	Snapshot  ledger.TxID `json:"snapshot"`
}

type jsonSnapshot struct {
	TxID ledger.TxID `json:"tx_id"`
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
