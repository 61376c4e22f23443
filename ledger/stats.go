package ledger

import (
	"time"

	"github.com/lanework/lanework/pressure"
)

// Stats is a snapshot of a ledger's progress and counters, for metrics and
// tools. Counters start at zero when Open returns. Each field (each bucket
// of a histogram) is one atomic load of a value written by a single stage,
// so a snapshot taken under load is consistent per field but only
// approximately across fields; the relations documented below hold in every
// snapshot.
type Stats struct {
	// Indexes are the pipeline's progress marks, loaded downstream first
	// as Indexes does (Snapshot <= Committed <= Computed <= Sequenced).
	Indexes Indexes
	// Recovered is the last durable transaction when Open returned; the
	// ids of this run start after it.
	Recovered TxID
	// Submitted is the number of transactions sequenced since Open
	// (Indexes.Sequenced - Recovered).
	Submitted uint64
	// Committed is the number of transactions made durable since Open
	// (Indexes.Committed - Recovered).
	Committed uint64
	// Outcomes[k][r] is the number of transactions of Kind k executed by
	// the Transactor since Open whose outcome is FailReason r:
	// Outcomes[k][OK] succeeded, the others were rolled back and journaled
	// with that reason. Index 0 of the kind dimension is unused. The
	// Transactor adds a run's counts before it advances Computed, so their
	// sum is at least Indexes.Computed - Recovered. Use Fails for one
	// reason over all kinds.
	Outcomes [numKinds][numFailReasons]uint64
	// WALBatches is the number of WAL group commits written since Open:
	// each is one record of the ledger's own log, fdatasynced, counted
	// once the sync returned.
	WALBatches uint64
	// WALBytes is the encoded size of those batches.
	WALBytes uint64
	// WALSyncTime is the total time the WAL stage spent in synced commits;
	// WALSyncTime / WALBatches is the mean sync latency.
	WALSyncTime time.Duration
	// WALSyncTimes is the distribution of those sync times in
	// nanoseconds, from 50 µs to 1.6 s (Bound(i) = 50 µs << i); its Sum is
	// WALSyncTime. WALGroupSizes is the distribution of the transactions
	// per group commit, from 1 to 32768 (Bound(i) = 1 << i). Both are
	// counted once the sync returned, like WALBatches.
	WALSyncTimes, WALGroupSizes Histogram
	// Syncs is the number of synced writes the pipeline made since Open:
	// one per WAL batch plus one per snapshot manifest committed to pebble
	// (WALBatches + Snapshots).
	Syncs uint64
	// Snapshots is the number of snapshots made durable since Open,
	// periodic (SnapshotEvery) and requested (Snapshot) alike.
	Snapshots uint64
	// SnapshotTx is the transaction covered by the newest durable snapshot:
	// the one written last, or the one recovery loaded; 0 if none.
	SnapshotTx TxID
	// DedupExpired is the number of transactions since Open whose UserRef
	// the durable index still named, but from a transaction past
	// DedupRetention: each was executed as a new transaction (likely a
	// retry that came too late; see docs/ledger.md).
	DedupExpired uint64
	// Pressure is the pressure manager's snapshot: its Level (Idle, Low,
	// High), how often stages parked (Parks), were woken (Unparks) and
	// yielded (Yields). The ledger registers three stages: the
	// Transactor, the WAL and the Snapshotter.
	Pressure pressure.Stats
	// Closed is true once Close was called; Failed once a storage error
	// stopped the pipeline.
	Closed, Failed bool
	// Replicated is the Replicated index (replicate.go): Indexes.Committed
	// on a single node. Follower is set on a ledger opened by
	// OpenFollower. Hash chains the checksums of the batches in the WAL:
	// equal on replicas that hold the same batches.
	Replicated TxID
	Follower   bool
	Hash       uint64
}

// walSyncFirstBucket is the first bound of WALSyncTimes in nanoseconds: a
// group commit on a fast disk syncs in tens of microseconds, on a slow one
// in milliseconds. The server's latency histograms use the same bounds.
const walSyncFirstBucket = 50_000

// StageStats appends the pressure counters of each pipeline stage (the
// Transactor, the WAL, the Snapshotter, in that order) to dst: whether it is
// parked now, how often it parked, was woken and yielded. Stats.Pressure is
// their sum.
func (l *Ledger) StageStats(dst []pressure.StageStats) []pressure.StageStats {
	return l.pm.StageStats(dst)
}

// Fails returns the number of transactions of every kind executed since
// Open with outcome r (Fails(OK): those that succeeded).
func (s *Stats) Fails(r FailReason) uint64 {
	if r > Duplicate {
		return 0
	}
	var n uint64
	for k := range s.Outcomes {
		n += s.Outcomes[k][r]
	}
	return n
}

// Stats returns a snapshot of the ledger's indexes and counters. It takes
// no lock and writes nothing: about a hundred atomic loads. It works after
// Close and after a failure too, returning the final values.
func (l *Ledger) Stats() Stats {
	st := l.state.Load()
	s := Stats{Indexes: l.indexes(), Recovered: TxID(l.recovered.last),
		Closed: st&closedBit != 0, Failed: st&failedBit != 0}
	s.Submitted = uint64(s.Indexes.Sequenced - s.Recovered)
	s.Committed = uint64(s.Indexes.Committed - s.Recovered)
	for k := range l.outcomes {
		for f := range l.outcomes[k] {
			s.Outcomes[k][f] = l.outcomes[k][f].Load()
		}
	}
	s.WALBatches = l.walBatches.Load()
	s.WALBytes = l.walBytes.Load()
	s.WALSyncTimes, s.WALGroupSizes = l.walSync.load(), l.walGroup.load()
	s.WALSyncTime = time.Duration(s.WALSyncTimes.Sum)
	s.Snapshots = l.snapshots.Load()
	s.SnapshotTx = TxID(l.persisted.Load())
	s.Syncs = s.WALBatches + s.Snapshots
	s.DedupExpired = l.dedupExpired.Load()
	s.Pressure = l.pm.Stats()
	s.Replicated, s.Follower, s.Hash = TxID(l.index(Replicated)), l.rep.follower, l.rep.hash.Load()
	return s
}
