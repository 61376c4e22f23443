package ledger

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lanework/lanework/pressure"
)

// Defaults for the zero fields of Config.
const (
	DefaultMaxAccounts   = 1_000_000
	DefaultRingSize      = 1 << 16
	DefaultWALMaxBatch   = 1 << 14
	DefaultMaxEntries    = 16
	DefaultSnapshotEvery = 1_000_000
	DefaultDedupWindow   = 1 << 17
	// DefaultDedupRetention is how long a UserRef is remembered.
	DefaultDedupRetention = 24 * time.Hour
	DefaultWALRetention   = 4_000_000
	// DefaultWALSegmentSize is the size of a WAL segment file.
	DefaultWALSegmentSize = 64 << 20
)

// MaxAccountsLimit is the largest Config.MaxAccounts: 2^28 accounts need
// about 19 GiB preallocated (see Config.MaxAccounts).
const MaxAccountsLimit = 1 << 28

// Config configures Open. The zero value of every field except Dir selects
// its documented default.
type Config struct {
	// Dir is the pebble directory; it is created if missing. Required.
	Dir string
	// FS is the filesystem pebble uses; nil means the OS (vfs.Default).
	// Tests pass a fault-injecting or in-memory vfs.FS.
	FS vfs.FS
	// MaxAccounts bounds the number of accounts, the system account
	// included (CreateAccount fails with AccountsLimitReached beyond it);
	// default 1,000,000; at most MaxAccountsLimit. Account ids are any
	// uint64 but 0; they map to dense slots through an open-addressing
	// index. Everything per account is preallocated: 32 bytes of metadata,
	// twice 32 bytes of cells (the four columns: the Transactor's working
	// cells, and the readable cells the Snapshotter applies committed
	// transactions to, from which snapshots are written without a copy)
	// and 24 to 48 bytes of index: 120 to 144 bytes per account. Fixed
	// when the directory is created; opening with another value fails
	// with ErrIncompatible.
	MaxAccounts uint64
	// WaitStrategy governs how idle stages wait; default pressure.Balanced.
	WaitStrategy pressure.WaitStrategy
	// RingSize is the capacity of each inter-stage ring, rounded up to a
	// power of two; default 65,536. It also bounds SubmitBatch.
	RingSize int
	// WALMaxBatch bounds the transactions per WAL group commit; default
	// 16,384. The WAL commits whatever is ready up to this bound, so
	// batches are small under light load and large under heavy load.
	WALMaxBatch int
	// MaxEntries is the most legs a Composite may have before it fails with
	// EntryLimitExceeded; default 16, at most MaxLegs.
	MaxEntries int
	// SnapshotEvery is how many transactions pass between persisted
	// snapshots; default 1,000,000; negative disables snapshots.
	SnapshotEvery int64
	// DedupWindow is how many transaction ids a UserRef is remembered for
	// when DedupRetention is negative; default 131,072. Each snapshot keeps
	// this window either way (Open loads it).
	DedupWindow uint64
	// DedupRetention is how long a UserRef is remembered, by transaction
	// timestamps, across restarts: a retry within it is a Duplicate naming
	// the original. Default 24 h; negative keeps only DedupWindow (and
	// what the newest snapshot holds of it). The Snapshotter writes each
	// ref into pebble (off the Transactor's path), and the persister
	// prunes what retention has passed. A retry after the retention is
	// executed as a new transaction; see docs/ledger.md for what is
	// reported then.
	DedupRetention time.Duration
	// DedupRetentionTxs, if positive, also forgets a UserRef once more
	// than this many transactions followed it, whichever limit passes
	// first: a bound on the index's size. Default 0: no count limit. At
	// least DedupWindow.
	DedupRetentionTxs uint64
	// WALRetention is how many transactions of WAL are kept below the
	// newest persisted snapshot (older WAL is deleted, and Result no longer
	// finds those transactions); default 4,000,000; negative keeps all.
	// Keep it at least SnapshotEvery so that recovery can fall back to the
	// previous snapshot if the newest is damaged. Retention removes whole
	// segments, so up to one segment more is kept.
	WALRetention int64
	// WALSegmentSize is the size of each WAL segment file, preallocated when
	// the segment is created; default 64 MiB, at least 256 KiB, at most 1 GiB.
	// A segment holds at most a quarter of it per group commit.
	WALSegmentSize int64
	// Index keeps the history and query indexes (AccountTransfers,
	// AccountBalances, BalanceAt, QueryTransfers, QueryAccounts and
	// LookupTransfers; without it they fail with ErrIndexOff). Off by
	// default: the Snapshotter writes them for every transaction, into
	// a pebble store of their own without a log (index/ under Dir), which
	// still costs a fifth to a half of the durable throughput
	// (docs/ledger.md, "What the index costs"). Open rebuilds what a crash
	// took from the WAL. An Open without it leaves the index as it was, unserved; the
	// next Open with it catches up from the WAL, or restarts it at the
	// recovered state if retention removed what it lacks.
	Index bool

	// now, if set (tests), is the Transactor's clock in Unix ns, in place
	// of the wall clock.
	now func() int64
}

func (c Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	if c.Dir == "" {
		return bad("Dir is required")
	}
	if c.FS == nil {
		c.FS = vfs.Default
	}
	if c.MaxAccounts == 0 {
		c.MaxAccounts = DefaultMaxAccounts
	}
	if c.MaxAccounts < 2 || c.MaxAccounts > MaxAccountsLimit {
		return bad("MaxAccounts %d out of range [2, %d]", c.MaxAccounts, MaxAccountsLimit)
	}
	if c.WaitStrategy > pressure.LowCPU {
		return bad("unknown WaitStrategy %d", c.WaitStrategy)
	}
	if c.RingSize == 0 {
		c.RingSize = DefaultRingSize
	}
	if c.RingSize < 2 || c.RingSize > 1<<24 {
		return bad("RingSize %d out of range [2, 2^24]", c.RingSize)
	}
	if c.WALMaxBatch == 0 {
		c.WALMaxBatch = DefaultWALMaxBatch
	}
	if c.WALMaxBatch < 1 || c.WALMaxBatch > 1<<20 {
		return bad("WALMaxBatch %d out of range [1, 2^20]", c.WALMaxBatch)
	}
	if c.MaxEntries == 0 {
		c.MaxEntries = DefaultMaxEntries
	}
	if c.MaxEntries < 2 || c.MaxEntries > MaxLegs {
		return bad("MaxEntries %d out of range [2, %d]", c.MaxEntries, MaxLegs)
	}
	if c.SnapshotEvery == 0 {
		c.SnapshotEvery = DefaultSnapshotEvery
	}
	if c.DedupWindow == 0 {
		c.DedupWindow = DefaultDedupWindow
	}
	if c.DedupWindow > 1<<26 {
		return bad("DedupWindow %d above 2^26", c.DedupWindow)
	}
	if c.DedupRetention == 0 {
		c.DedupRetention = DefaultDedupRetention
	}
	if c.DedupRetention > 0 && c.DedupRetentionTxs > 0 && c.DedupRetentionTxs < c.DedupWindow {
		return bad("DedupRetentionTxs %d below DedupWindow %d", c.DedupRetentionTxs, c.DedupWindow)
	}
	if c.WALRetention == 0 {
		c.WALRetention = DefaultWALRetention
	}
	if c.WALSegmentSize == 0 {
		c.WALSegmentSize = DefaultWALSegmentSize
	}
	if c.WALSegmentSize < 256<<10 || c.WALSegmentSize > 1<<30 {
		return bad("WALSegmentSize %d out of range [256 KiB, 1 GiB]", c.WALSegmentSize)
	}
	return c, nil
}
