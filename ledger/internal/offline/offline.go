// Package offline carries the offline inspection of a closed ledger
// directory from the engine (package ledger), which owns the on-disk
// formats and the recovery rules, to package inspect, which presents it.
//
// The engine sets Verify and Dump in its init; package inspect imports the
// engine, so they are set whenever inspect runs. The types here use plain
// integers for transaction ids: package ledger cannot be named below it.
package offline

import "github.com/cockroachdb/pebble/v2/vfs"

// Set by package ledger (offline.go there).
var (
	// Verify checks the closed ledger directory dir read-only. A nil report
	// comes with an error that kept it from looking at all.
	Verify func(fs vfs.FS, dir string) (*Report, error)
	// Dump calls fn for every transaction with id in [from, to] (to == 0:
	// through the last), in id order, after verifying each batch read. The
	// Tx passed is reused between calls.
	Dump func(fs vfs.FS, dir string, from, to uint64, fn func(*Tx) error) error
	// Recover cuts the damaged log of dir after transaction after and
	// records that it did (ledger recover).
	Recover func(fs vfs.FS, dir string, after uint64) (*Truncation, error)
)

// Truncation is what Recover did, and what Verify reads back. Package
// inspect documents the fields (inspect.Truncation).
type Truncation struct {
	TruncatedAfter   uint64
	FirstTx          uint64
	Damage           error // a *ledger.CorruptError; nil when an interrupted run was finished
	SnapshotsDropped []uint64
	UnixNs           int64
}

// Report is what Verify found. Package inspect documents the fields
// (inspect.VerifyReport).
type Report struct {
	MaxAccounts  uint64
	FirstTx      uint64
	LastTx       uint64
	Batches      int
	Transactions uint64
	FromZero     bool
	KeptSegments int
	RefBlocks    int
	TornTail     *Torn
	Snapshots    []Snapshot
	Findings     []error // each a *ledger.CorruptError
	Truncations  []Truncation
}

// Torn is a torn WAL tail, as ledger.TornTail.
type Torn struct {
	File     string
	Offset   int64
	Dropped  int64
	LastKept uint64
}

// Snapshot is the verdict on one persisted snapshot.
type Snapshot struct {
	TxID     uint64
	Valid    bool
	Replayed bool
}

// Tx is one transaction of the WAL, as Dump reads it.
type Tx struct {
	ID       uint64
	Kind     string // ledger.Kind's String
	Fail     string // ledger.FailReason's String
	UserRef  uint64
	DupOf    uint64
	TsNs     int64
	Entries  []Entry
	Account  *Account  // create_account only
	Transfer *Transfer // a transfer's fields; nil for other kinds and duplicates
	// Expired are the pending transfers released before this transaction
	// by the expiry scan; Entries start with their releases (two each).
	Expired []uint64
}

// Transfer is a transfer's fields.
type Transfer struct {
	Ledger    uint32
	Code      uint16
	Flags     []string // ledger.TransferFlags' names
	UserData  uint64
	PendingID uint64
	Timeout   uint32
}

// Entry is one entry of a Tx.
type Entry struct {
	Account uint64
	Column  string // ledger.Column's String
	Delta   int64
	Value   int64
}

// Account is a create_account's account.
type Account struct {
	ID       uint64
	Ledger   uint32
	Code     uint16
	Flags    uint16
	UserData [2]uint64
}
