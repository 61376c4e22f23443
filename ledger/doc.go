// Package ledger is an embeddable, pipelined, durable financial ledger.
//
// A transaction passes four stages, each one goroutine, connected by ringbuf
// rings and governed by one pressure.Manager:
//
//	Submit -> Sequencer -> Transactor -> WAL -> Snapshotter
//
// The Sequencer assigns contiguous transaction ids. The Transactor, the only
// writer of the working balances, runs the business logic once and turns each
// operation into immutable entries (account, signed delta, resulting balance)
// whose deltas sum to zero, or into a failed transaction with a FailReason and
// no entries. The WAL group-commits batches of computed transactions, one
// record each, to its own segment files (internal/wal) with fdatasync. The
// Snapshotter applies committed entries to the readable
// balances and periodically persists a snapshot into pebble, so that
// recovery replays only the WAL after it. Open refuses damaged data with a
// *CorruptError and writes nothing then; the one loss it accepts, and
// reports, is a torn tail of the newest WAL segment (see docs/ledger.md).
//
// Each stage publishes a monotonic index (Computed, Committed, Snapshot; the
// Sequencer's is Sequenced). A transaction's Status derives from them, and a
// caller may wait for any level with Wait or SubmitAndWait; waiting is event
// driven and costs the stages one atomic load per advance while nobody waits.
//
// Account 0 is the system account: deposits take money from it and
// withdrawals return money to it, so the sum of all balances is always zero.
package ledger
