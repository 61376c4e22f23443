package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// DumpTx is one line of Dump's output.
type DumpTx struct {
	ID      TxID        `json:"id"`
	Kind    string      `json:"kind"` // create_account, deposit, withdrawal, transfer, composite
	Fail    string      `json:"fail"` // ok, exceeds_credits, ..., duplicate (FailReason.String)
	UserRef uint64      `json:"user_ref"`
	DupOf   TxID        `json:"dup_of"`
	TsNs    int64       `json:"ts_unix_ns"`
	Entries []DumpEntry `json:"entries"` // empty for a failed transaction
	// Account is a create_account's account, null for other kinds.
	Account *DumpAccount `json:"account"`
}

// DumpEntry is one entry of a DumpTx.
type DumpEntry struct {
	Account uint64 `json:"account"`
	Column  string `json:"column"`
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

var errDumpDone = errors.New("dump done")

// Dump writes the transactions with ids in [from, to] of a closed ledger
// directory to w as NDJSON: one DumpTx object per line, in id order, every
// field always present. to == 0 means through the last transaction. Every
// batch read is verified first; a damaged one stops the dump with a
// *CorruptError after the lines before it. Nothing on disk changes.
func Dump(dir string, from, to TxID, w io.Writer) error { return dumpFS(nil, dir, from, to, w) }

func dumpFS(fs vfs.FS, dir string, from, to TxID, w io.Writer) error {
	db, _, err := openOffline(fs, dir)
	if err != nil {
		return err
	}
	defer db.Close()
	if fs == nil {
		fs = vfs.Default
	}
	enc := json.NewEncoder(w)                        // Encode ends every object with '\n'
	line := DumpTx{Entries: make([]DumpEntry, 0, 4)} // [] for no entries, not null
	_, err = scanWAL(&Config{FS: fs, Dir: dir}, uint64(max(from, 1)), func(t *walTx) error {
		if to != 0 && TxID(t.id) > to {
			return errDumpDone
		}
		line = DumpTx{ID: TxID(t.id), Kind: t.kind.String(), Fail: strings.ReplaceAll(t.fail.String(), " ", "_"),
			UserRef: t.userRef, DupOf: TxID(t.dupOf), TsNs: t.ts, Entries: line.Entries[:0]}
		if t.kind == KindCreateAccount {
			a := t.acct
			line.Account = &DumpAccount{ID: a.id, Ledger: a.ledger, Code: a.code, Flags: uint16(a.flags), UserData: a.userData}
		}
		for i := 0; i < t.n; i++ {
			e := t.entry(i)
			line.Entries = append(line.Entries, DumpEntry{Account: e.Account, Column: e.Column.String(), Delta: e.Delta, Value: e.Value})
		}
		if err := enc.Encode(&line); err != nil {
			return fmt.Errorf("ledger: dump: %w", err)
		}
		return nil
	})
	if errors.Is(err, errDumpDone) {
		return nil
	}
	return err
}
