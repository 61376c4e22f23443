package ledger

import (
	"errors"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lanework/lanework/ledger/internal/offline"
)

var errDumpDone = errors.New("dump done")

// dumpDir calls fn for the transactions with ids in [from, to] of a closed
// ledger directory, in id order; to == 0 means through the last. Every
// batch read is verified first; a damaged one stops the dump with a
// *CorruptError after the transactions before it. Nothing on disk changes.
// The Tx passed to fn is reused.
func dumpDir(fs vfs.FS, dir string, from, to uint64, fn func(*offline.Tx) error) error {
	db, _, err := openOffline(fs, dir)
	if err != nil {
		return err
	}
	defer db.Close()
	if fs == nil {
		fs = vfs.Default
	}
	line := offline.Tx{Entries: make([]offline.Entry, 0, 4)}
	_, err = scanWAL(&Config{FS: fs, Dir: dir}, max(from, 1), func(t *walTx) error {
		if to != 0 && t.id > to {
			return errDumpDone
		}
		line = offline.Tx{ID: t.id, Kind: t.kind.String(), Fail: strings.ReplaceAll(t.fail.String(), " ", "_"),
			UserRef: t.userRef, DupOf: t.dupOf, TsNs: t.ts, Entries: line.Entries[:0], Expired: line.Expired[:0]}
		if t.kind == KindCreateAccount {
			a := t.acct
			line.Account = &offline.Account{ID: a.id, Ledger: a.ledger, Code: a.code, Flags: uint16(a.flags), UserData: a.userData}
		}
		if t.kind == KindTransfer && t.fail != Duplicate {
			x := &t.xfer
			line.Transfer = &offline.Transfer{Ledger: x.ledger, Code: x.code, Flags: x.flags.Names(), UserData: x.userData,
				PendingID: x.pendingID, Timeout: x.timeout}
		}
		for i := 0; i < t.nexp/2; i++ {
			line.Expired = append(line.Expired, t.expired(i))
		}
		for i := 0; i < t.n; i++ {
			e := t.entry(i)
			line.Entries = append(line.Entries, offline.Entry{Account: e.Account, Column: e.Column.String(), Delta: e.Delta, Value: e.Value})
		}
		return fn(&line)
	})
	if errors.Is(err, errDumpDone) {
		return nil
	}
	return err
}
