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
//     run: submits fail with *NotLeaderError. Apply takes one leader batch,
//     replays it with replayBatch (the function Open's recovery uses, so a
//     follower's state is by construction what recovery of the same WAL
//     yields), appends it unchanged to the follower's WAL and advances every
//     index. A follower promoted to leader is closed and reopened with Open:
//     recovery rebuilds the Transactor's state from that WAL.
//
//   - Hash. Every replica chains the checksums of the batches in its WAL
//     (retained at Open, then written or applied): replicas holding the same
//     batches have the same hash. It costs no hashing: a batch's CRC32C is
//     already in its header.
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
// Leader is the leader's client address if the replica knows it.
type NotLeaderError struct {
	Leader string
}

func (e *NotLeaderError) Error() string {
	if e.Leader == "" {
		return "ledger: not the leader (leader unknown)"
	}
	return "ledger: not the leader; the leader is " + e.Leader
}

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
	// replicated is the Replicated index: stored by the WAL stage (leader)
	// or Apply (follower) after the batch is durable on a quorum.
	replicated atomic.Uint64
	hash       atomic.Uint64          // chain of the batch checksums in the WAL
	leader     atomic.Pointer[string] // follower: the leader's address, if known
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

// SetLeader records the leader's client address, which a follower's
// *NotLeaderError carries; "" when unknown.
func (l *Ledger) SetLeader(addr string) { l.rep.leader.Store(&addr) }

func (l *Ledger) notLeader() error {
	e := &NotLeaderError{}
	if p := l.rep.leader.Load(); p != nil {
		e.Leader = *p
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
// the leader's log is idempotent. A batch that does not follow the last
// transaction, or does not replay, fails with a *CorruptError and changes
// nothing durable; a replay error inside the batch leaves the in-memory
// state half applied, so the follower fails and must be reopened.
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
	var t walTx
	accounts := rs.accts.n
	if err := replayBatch(&b, &t, rs); err != nil {
		err = &CorruptError{File: walDir, FirstTx: TxID(b.first), LastTx: TxID(b.last()), Reason: "replicated batch: " + err.Error()}
		l.fail(err)
		return err
	}
	rs.replayedRefs = rs.replayedRefs[:0] // only Open's loadRefIndex reads them
	l.rep.buf = append(append(l.rep.buf[:0], make([]byte, wal.HeaderRoom)...), batch...)
	if err := l.wal.Append(l.rep.buf, b.first, b.last()); err != nil {
		l.fail(err)
		return l.storageErr()
	}
	l.walBatches.Add(1)
	l.walBytes.Add(uint64(len(batch)))
	l.rep.hash.Store(chainBatch(l.rep.hash.Load(), batch))
	// The account records of the batch's creations, as the Snapshotter
	// writes them on a leader.
	if err := writeAccountRecords(l.db, rs.accts, accounts, false); err != nil {
		l.fail(err)
		return l.storageErr()
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
	return nil
}
