package inspect

import (
	"errors"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/internal/offline"
)

// Truncation records that an operator cut a damaged log with Recover.
type Truncation struct {
	// TruncatedAfter is the last transaction kept; every later one is gone.
	TruncatedAfter ledger.TxID
	// FirstTx is the first transaction of the log kept.
	FirstTx ledger.TxID
	// Damage is what Open refused the directory for; nil when Recover
	// finished a run that a crash had interrupted.
	Damage *ledger.CorruptError
	// SnapshotsDropped are the snapshots removed: their balances included
	// transactions after the cut.
	SnapshotsDropped []ledger.TxID
	At               time.Time
}

// Recover is the operator's explicit acceptance of loss, for a closed
// directory that ledger.Open refuses with a *ledger.CorruptError naming the
// transactions the damage affects: it keeps the log up to transaction
// truncateAfter, which must come before the damage, drops every later
// transaction (WAL records, the snapshots whose balances include any of
// them, their idempotency-index entries) and records the truncation in the
// directory, where Verify reports it and Open logs it. Then the directory
// opens, at truncateAfter.
//
// It refuses, with an error matching ledger.ErrRecover and changing
// nothing, a directory that opens as it is, a truncateAfter at or beyond
// the damage, damage that names no transaction, and a cut below the
// retained log without a snapshot to start from. A crash during Recover
// leaves a directory Open refuses until Recover runs again with the same
// truncateAfter.
func Recover(dir string, truncateAfter ledger.TxID) (*Truncation, error) {
	t, err := offline.Recover(nil, dir, uint64(truncateAfter))
	if err != nil {
		return nil, err
	}
	return truncationOf(t)
}

func truncationOf(t *offline.Truncation) (*Truncation, error) {
	out := &Truncation{TruncatedAfter: ledger.TxID(t.TruncatedAfter), FirstTx: ledger.TxID(t.FirstTx), At: time.Unix(0, t.UnixNs).UTC()}
	if t.Damage != nil && !errors.As(t.Damage, &out.Damage) {
		return nil, t.Damage // not a *ledger.CorruptError: the engine broke its contract
	}
	for _, id := range t.SnapshotsDropped {
		out.SnapshotsDropped = append(out.SnapshotsDropped, ledger.TxID(id))
	}
	return out, nil
}
