package inspect

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/internal/offline"
)

// DumpTx is one line of Dump's output.
type DumpTx struct {
	ID      ledger.TxID `json:"id"`
	Kind    string      `json:"kind"` // create_account, deposit, withdrawal, transfer, composite
	Fail    string      `json:"fail"` // ok, exceeds_credits, ..., duplicate (ledger.FailReason's String)
	UserRef uint64      `json:"user_ref"`
	DupOf   ledger.TxID `json:"dup_of"`
	TsNs    int64       `json:"ts_unix_ns"`
	Entries []DumpEntry `json:"entries"` // empty for a failed transaction
	// Account is a create_account's account, null for other kinds.
	Account *DumpAccount `json:"account"`
	// Transfer is a transfer's fields, null for other kinds and for a
	// duplicate.
	Transfer *DumpTransfer `json:"transfer"`
	// Expired are the pending transfers whose holds the expiry scan
	// released before this transaction; Entries start with those
	// releases, two each ([] if none).
	Expired []ledger.TxID `json:"expired"`
}

// DumpTransfer is the fields of a transfer: its ledger (the accounts',
// unless it failed before they were found), code, user data, flags (their
// snake_case names), the pending transfer a post or void names, and a
// pending transfer's timeout in seconds.
type DumpTransfer struct {
	Ledger    uint32      `json:"ledger"`
	Code      uint16      `json:"code"`
	Flags     []string    `json:"flags"`
	UserData  uint64      `json:"user_data"`
	PendingID ledger.TxID `json:"pending_id"`
	Timeout   uint32      `json:"timeout"`
}

// DumpEntry is one entry of a DumpTx: Column of Account changed by Delta
// to Value.
type DumpEntry struct {
	Account uint64 `json:"account"`
	Column  string `json:"column"` // debits_posted, credits_posted, debits_pending, credits_pending
	Delta   int64  `json:"delta"`
	Value   int64  `json:"value"`
}

// DumpAccount is the account of a create_account.
type DumpAccount struct {
	ID       uint64    `json:"id"`
	Ledger   uint32    `json:"ledger"`
	Code     uint16    `json:"code"`
	Flags    uint16    `json:"flags"`
	UserData [2]uint64 `json:"user_data"`
}

// Dump writes the transactions with ids in [from, to] of a closed ledger
// directory to w as NDJSON: one DumpTx object per line, in id order, every
// field always present. to == 0 means through the last transaction. Every
// batch read is verified first; a damaged one stops the dump with a
// *ledger.CorruptError after the lines before it. Nothing on disk changes.
func Dump(dir string, from, to ledger.TxID, w io.Writer) error {
	enc := json.NewEncoder(w)                        // Encode ends every object with '\n'
	line := DumpTx{Entries: make([]DumpEntry, 0, 4)} // [] for no entries, not null
	return offline.Dump(nil, dir, uint64(from), uint64(to), func(t *offline.Tx) error {
		line = DumpTx{ID: ledger.TxID(t.ID), Kind: t.Kind, Fail: t.Fail, UserRef: t.UserRef, DupOf: ledger.TxID(t.DupOf), TsNs: t.TsNs,
			Entries: line.Entries[:0], Expired: make([]ledger.TxID, 0, len(t.Expired))}
		for _, id := range t.Expired {
			line.Expired = append(line.Expired, ledger.TxID(id))
		}
		for _, e := range t.Entries {
			line.Entries = append(line.Entries, DumpEntry(e))
		}
		if a := t.Account; a != nil {
			line.Account = &DumpAccount{ID: a.ID, Ledger: a.Ledger, Code: a.Code, Flags: a.Flags, UserData: a.UserData}
		}
		if x := t.Transfer; x != nil {
			line.Transfer = &DumpTransfer{Ledger: x.Ledger, Code: x.Code, Flags: x.Flags, UserData: x.UserData,
				PendingID: ledger.TxID(x.PendingID), Timeout: x.Timeout}
		}
		if err := enc.Encode(&line); err != nil {
			return fmt.Errorf("inspect: dump: %w", err)
		}
		return nil
	})
}
