package ledger

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/lanework/lanework/ledger/internal/wal"
)

// Replication hooks. The ledger core knows nothing of consensus: a cluster
// module (ledgercluster) supplies a Replicator to a leader and feeds the
// leader's batches to its followers' Apply. The contract:
//
//   - Leader. The WAL stage hands each group commit's encoded batch to
//     Replicate before it writes the batch to its own WAL. Replicate returns
//     once a quorum of replicas holds the batch durably; the stage then
//     advances Replicated, delivers the Replicated waiters, appends and syncs
//     the batch locally and advances Committed as on a single node. So every
//     batch in any replica's WAL was replicated first: a replica's WAL is
//     always a prefix of the cluster's history and a deposed leader has
//     nothing to undo. A Replicate error fails the ledger (nothing more is
//     acknowledged at Replicated or above; waiters get the error, which
//     wraps *NotLeaderError when leadership was lost).
//
//   - Follower. OpenFollower opens a ledger whose pipeline stages do not
//     run (but the persister): submits fail with *NotLeaderError. Apply
//     takes one leader batch, appends it unchanged to the follower's WAL,
//     replays it with replayBatch (the function Open's recovery uses, so a
//     follower's state is by construction what recovery of the same WAL
//     yields), keeps the dedup window and durable idempotency index as the
//     Snapshotter does, advances every index, and hands the persister a
//     snapshot every SnapshotEvery transactions (which prunes the WAL as on
//     a leader). A follower promoted to leader is closed and reopened with
//     Open: recovery rebuilds the Transactor's state from its newest
//     snapshot and the WAL after it.
//
//   - Hash. Every replica chains the checksums of the batches of the
//     history: each WAL segment's creation records the chain before its
//     first batch (walfiles.go), so replicas that retain different WAL, or
//     installed a checkpoint (checkpoint.go), agree. It costs no hashing: a
//     batch's CRC32C is already in its header.
//
// With no Replicator (a single node), Replicated is Committed: a quorum of
// one is the local disk, and waits for it are waits for Committed. The
// hooks then cost a nil check and the hash's load and store per group
// commit.

// Replicator replicates the leader's WAL batches; see the contract above.
type Replicator interface {
	// Replicate returns nil once batch, the encoded group commit of
	// transactions first..last, is durable on a quorum of replicas. It is
	// called from the WAL stage only, in id order, and must not retain
	// batch after it returns.
	Replicate(batch []byte, first, last uint64) error
}

// NotLeaderError refuses a submit on a replica that is not the leader.
// Leader is the leader's client address and LeaderID its replica id, if
// the replica knows them. It matches ErrNotLeader.
type NotLeaderError struct {
	Leader   string
	LeaderID uint64
}

// ErrNotLeader is matched (errors.Is) by every *NotLeaderError, and by
// the wire error a server sends for one.
var ErrNotLeader = errors.New("ledger: not the leader")

func (e *NotLeaderError) Error() string {
	if e.Leader == "" {
		return "ledger: not the leader (leader unknown)"
	}
	return "ledger: not the leader; the leader is " + e.Leader
}

// Is reports whether target is ErrNotLeader.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// ErrNotFollower is returned by Apply on a ledger opened with Open.
var ErrNotFollower = errors.New("ledger: not a follower")

// openMode is how Open starts the ledger: single node, leader or follower.
type openMode struct {
	repl     Replicator
	follower bool
}

// replication is the Ledger's replication state.
type replication struct {
	repl     Replicator // leader of a cluster; nil otherwise
	follower bool       // opened by OpenFollower; read-only after Open
	rs       *recovered // follower: the replay state Apply continues
	buf      []byte     // follower: Apply's WAL record buffer
	// Follower: what the Snapshotter keeps on a leader, kept by Apply,
	// so that a follower snapshots and prunes its WAL like a leader.
	refs     refWindow // the dedup window, for snapshots
	run      *refRun   // the durable idempotency index's next run, if kept
	lastSnap uint64    // tx id of the last snapshot handed to the persister
	walFloor uint64    // retention keeps the WAL from here on (recovered.walFloor)
	// replicated is the Replicated index: stored by the WAL stage (leader)
	// or Apply (follower) after the batch is durable on a quorum.
	replicated atomic.Uint64
	hash       *atomic.Uint64                 // chain of the checksums of every batch in the history (walfiles.go records it per segment)
	leader     atomic.Pointer[NotLeaderError] // follower: the leader, if known
}

// OpenReplicated opens dir like Open, as a cluster's leader whose group
// commits r replicates.
func OpenReplicated(cfg Config, r Replicator) (*Ledger, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: nil Replicator", ErrConfig)
	}
	return open(cfg, openMode{repl: r})
}

// OpenFollower opens dir as a cluster follower: recovery runs as in Open,
// then the ledger takes batches through Apply and refuses submits.
func OpenFollower(cfg Config) (*Ledger, error) {
	return open(cfg, openMode{follower: true})
}

// SetLeader records the leader's replica id and client address, which a
// follower's *NotLeaderError carries; 0 and "" when unknown.
func (l *Ledger) SetLeader(id uint64, addr string) {
	l.rep.leader.Store(&NotLeaderError{Leader: addr, LeaderID: id})
}

func (l *Ledger) notLeader() error {
	e := &NotLeaderError{}
	if p := l.rep.leader.Load(); p != nil {
		*e = *p
	}
	return e
}

// Follower reports whether l was opened by OpenFollower.
func (l *Ledger) Follower() bool { return l.rep.follower }

// Hash returns the chain of the checksums of every batch in l's WAL; two
// replicas that retain the same WAL and hold the same batches have equal
// hashes.
func (l *Ledger) Hash() uint64 { return l.rep.hash.Load() }

// chainBatch folds a verified batch (its CRC, first id and count) into h.
func chainBatch(h uint64, batch []byte) uint64 {
	const prime = 0x100000001b3 // FNV-1a's 64-bit prime
	for _, w := range [...]uint64{uint64(batch[0]) | uint64(batch[1])<<8 | uint64(batch[2])<<16 | uint64(batch[3])<<24,
		leUint64(batch[4:]), uint64(leUint32(batch[12:]))} {
		h = (h ^ w) * prime
	}
	return h
}

func leUint32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func leUint64(b []byte) uint64 { return uint64(leUint32(b)) | uint64(leUint32(b[4:]))<<32 }

// replicate runs in the WAL stage before the local append of batch (the
// encoded record without its wal.HeaderRoom) and advances Replicated.
func (l *Ledger) replicate(batch []byte, recs []txRecord) error {
	first, last := recs[0].id, recs[len(recs)-1].id
	if l.rep.repl != nil {
		if err := l.rep.repl.Replicate(batch, first, last); err != nil {
			return err
		}
		l.rep.replicated.Store(last)
		l.waits[Replicated].release(TxID(last))
		l.deliver(recs, Replicated)
	}
	return nil
}

// committedLocally runs in the WAL stage after the local append and sync.
func (l *Ledger) committedLocally(batch []byte) {
	l.rep.hash.Store(chainBatch(l.rep.hash.Load(), batch)) // this stage is the only writer
}

// waitLevel is the level a wait for level is served at: on a single node
// Replicated is Committed, so its waiters ride on Committed's deliveries
// and the WAL stage pays nothing for the level.
func (l *Ledger) waitLevel(level Level) Level {
	if level == Replicated && l.rep.repl == nil && !l.rep.follower {
		return Committed
	}
	return level
}

// Apply appends one batch of the leader's (a WAL batch record as the
// leader's Replicator received it) to a follower's WAL and applies it. A
// batch at or below the follower's last transaction is skipped: replaying
// the leader's log is idempotent. A batch that fails its checksum or does
// not follow the last transaction fails with a *CorruptError and changes
// nothing. The batch is appended before it is replayed (a snapshot the
// persister writes meanwhile may hold its balances, so it must be in the
// WAL first, as on a leader): one that then does not replay fails the
// follower with a *CorruptError, and its Open refuses the WAL likewise.
// Apply is called from one goroutine at a time.
func (l *Ledger) Apply(batch []byte) error {
	if !l.rep.follower {
		return ErrNotFollower
	}
	if err := l.enter(); err != nil {
		return err
	}
	defer l.exit()
	b, err := openBatch(batch)
	if err != nil {
		return &CorruptError{File: walDir, Reason: "replicated batch: " + err.Error()}
	}
	rs := l.rep.rs
	switch {
	case b.last() <= rs.last:
		return nil
	case b.first != rs.last+1:
		return &CorruptError{File: walDir, FirstTx: TxID(b.first), LastTx: TxID(b.last()),
			Reason: fmt.Sprintf("replicated batch does not follow tx %d", rs.last)}
	}
	l.rep.buf = append(append(l.rep.buf[:0], make([]byte, wal.HeaderRoom)...), batch...)
	if err := l.wal.Append(l.rep.buf, b.first, b.last()); err != nil {
		l.fail(err)
		return l.storageErr()
	}
	l.rep.hash.Store(chainBatch(l.rep.hash.Load(), batch))
	accounts := rs.accts.n
	// Before any balance store of the batch: a persister that reads one
	// of them and then loads applying sees at least its last tx.
	l.applying.Store(b.last())
	if err := replayBatch(&b, rs); err != nil {
		err = &CorruptError{File: walDir, FirstTx: TxID(b.first), LastTx: TxID(b.last()), Reason: "replicated batch: " + err.Error()}
		l.fail(err)
		return err
	}
	l.walBatches.Add(1)
	l.walBytes.Add(uint64(len(batch)))
	// The account records of the batch's creations and its refs in the
	// durable index, as the Snapshotter writes them on a leader, before
	// any snapshot covers the batch.
	if err := writeAccountRecords(l.db, rs.accts, accounts, false); err != nil {
		l.fail(err)
		return l.storageErr()
	}
	for _, u := range rs.replayedRefs {
		l.rep.refs.trim(u.id, nil)
		l.rep.refs.push(refEntry{id: u.id, ref: u.ref})
		if l.rep.run != nil {
			l.rep.run.add(u.id, u.ref, u.ts)
		}
	}
	rs.replayedRefs = rs.replayedRefs[:0]
	if l.rep.run != nil {
		if err := l.rep.run.flush(l.db); err != nil {
			l.fail(err)
			return l.storageErr()
		}
	}
	last := b.last()
	// Work, then index (invariant 3), downstream last so that the indexes
	// keep their order at every instant.
	l.sequenced.Store(last)
	l.computed.Store(last)
	l.rep.replicated.Store(last)
	l.committed.Store(last)
	l.applying.Store(last)
	l.visible.Store(rs.accts.n) // before Snapshot: a reader seeing the index sees the accounts
	l.snapshot.Store(last)
	for lv := Computed; lv <= Replicated; lv++ {
		l.waits[lv].release(TxID(last))
	}
	// A snapshot every SnapshotEvery transactions, or for a Snapshot
	// call, as the Snapshotter decides on a leader; the persister writes
	// it while later batches apply, and prunes the WAL below it.
	due := l.cfg.SnapshotEvery > 0 && last-l.rep.lastSnap >= uint64(l.cfg.SnapshotEvery)
	if want := l.snapWant.Load(); want > l.rep.lastSnap && last >= want {
		due = true
	}
	// The book as of last is the replay's own (Apply runs the batch whole).
	if due && l.takeSnapshot(last, rs.lastTs, rs.accts.n, &l.rep.refs, rs.book) {
		l.rep.lastSnap = last
	}
	return nil
}
