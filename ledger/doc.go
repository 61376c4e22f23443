// Package ledger is an embeddable, pipelined, durable financial ledger.
//
// A transaction passes four stages, each one goroutine, connected by ringbuf
// rings and governed by one pressure.Manager:
//
//	Submit -> Sequencer -> Transactor -> WAL -> Snapshotter
//
// The Sequencer assigns contiguous transaction ids. The Transactor, the only
// writer of the accounts and their working columns, runs the business logic
// once and turns each operation into immutable entries (account, column,
// delta, resulting value) whose debits equal their credits, or into a
// failed transaction with a FailReason and no entries. The WAL group-commits batches of computed transactions, one
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
// Accounts are created (CreateAccount) with a sparse id, a ledger, a code
// and flags, and keep four columns: debits and credits, posted and pending.
// Account 0 is the system account, which exists without being created:
// deposits debit it and withdrawals credit it, so over all accounts the
// debits always equal the credits. See docs/ledger.md for the data model.
package ledger
