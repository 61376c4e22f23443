// Package inspect holds the offline tools for a closed ledger directory:
// Verify checks everything stored and Dump prints the transactions of the
// WAL, both without changing anything; Recover, the operator's explicit
// acceptance of loss, cuts a damaged log. All apply the recovery rules of
// ledger.Open (docs/ledger.md), so a directory Verify passes is one Open
// accepts; the engine that owns the formats stays in package ledger.
package inspect

import (
	"errors"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/internal/offline"
)

// VerifyReport is what Verify found in a ledger directory.
type VerifyReport struct {
	MaxAccounts  uint64
	FirstTx      ledger.TxID // first transaction in the WAL; 0 if the WAL is empty
	LastTx       ledger.TxID // last transaction in a decodable WAL batch
	Batches      int         // WAL batches read, the torn tail included
	Transactions uint64
	// FromZero is true when the WAL starts at transaction 1, so every
	// resulting balance was checked against a replay from zero.
	FromZero bool
	// KeptSegments and RefBlocks are what Verify checked of the history
	// index (Config.Index), when index/wal/ exists: the kept WAL segments
	// not also in wal/ (those the WAL check read), and the index's
	// reference blocks, each read from its kept segment.
	KeptSegments int
	RefBlocks    int
	// TornTail is the torn tail of the newest WAL segment (the remains of
	// a write cut short by a crash, never acknowledged), nil if none. Open
	// drops it; Verify does not count it as a finding.
	TornTail  *ledger.TornTail
	Snapshots []SnapshotCheck
	// Findings lists every inconsistency in the order found: the WAL's and
	// the store's, then the history index's. Verify returns a
	// non-nil error exactly when it is non-empty.
	Findings []*ledger.CorruptError
	// Truncations are the cuts Recover made in this directory, oldest
	// first.
	Truncations []Truncation
}

// SnapshotCheck is the verdict on one persisted snapshot.
type SnapshotCheck struct {
	TxID ledger.TxID
	// Valid: the manifest, every chunk checksum, the zero balance sum and
	// the dedup window verify, so Open could load it.
	Valid bool
	// Replayed: the WAL covers the snapshot and its balances equal the
	// replay up to TxID. A valid snapshot older than the retained WAL
	// cannot be compared.
	Replayed bool
}

// Verify checks a closed ledger directory without changing it: the meta
// record; every WAL batch's checksum and structure; contiguous transaction
// ids; the zero sum of every transaction; that every entry's resulting
// balance continues the account's previous one; every snapshot, and that it
// equals the WAL replay up to its transaction; with the history index, its
// kept WAL segments and reference blocks. It reads past damage to find
// all of it. The error is nil if the report has no findings; otherwise it
// joins the findings (each a *ledger.CorruptError, matching
// ledger.ErrCorrupt). Errors opening the directory are returned with a nil
// report (ledger.ErrNoLedger, ledger.ErrLocked, ...); a directory of an older
// format fails with ledger.ErrIncompatible.
func Verify(dir string) (*VerifyReport, error) {
	r, err := offline.Verify(nil, dir)
	if r == nil {
		return nil, err
	}
	rep := &VerifyReport{MaxAccounts: r.MaxAccounts, FirstTx: ledger.TxID(r.FirstTx), LastTx: ledger.TxID(r.LastTx),
		Batches: r.Batches, Transactions: r.Transactions, FromZero: r.FromZero, KeptSegments: r.KeptSegments, RefBlocks: r.RefBlocks}
	if t := r.TornTail; t != nil {
		rep.TornTail = &ledger.TornTail{File: t.File, Offset: t.Offset, Dropped: t.Dropped, LastKept: ledger.TxID(t.LastKept)}
	}
	for _, s := range r.Snapshots {
		rep.Snapshots = append(rep.Snapshots, SnapshotCheck{TxID: ledger.TxID(s.TxID), Valid: s.Valid, Replayed: s.Replayed})
	}
	for _, f := range r.Findings {
		var ce *ledger.CorruptError
		if !errors.As(f, &ce) {
			return nil, f // not a finding: the engine broke its contract
		}
		rep.Findings = append(rep.Findings, ce)
	}
	for i := range r.Truncations {
		t, terr := truncationOf(&r.Truncations[i])
		if terr != nil {
			return nil, terr
		}
		rep.Truncations = append(rep.Truncations, *t)
	}
	return rep, err
}
