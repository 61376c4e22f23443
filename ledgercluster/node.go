package ledgercluster

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Node is one replica: a raft.Node, its durable raft log and transport,
// and the replica's ledger, which is a follower (ledger.OpenFollower) or,
// while this replica leads and has applied everything committed before its
// term, a leader (ledger.OpenReplicated with the Node as Replicator). The
// Ready loop (run) is the only goroutine that changes the ledger.
type Node struct {
	cfg Config
	log *slog.Logger
	rn  raft.Node
	rl  *raftLog
	tr  *transport

	auth *server.Authenticator // Config.Tokens; nil: none
	cur  atomic.Pointer[ledger.Ledger]
	lead atomic.Uint64 // raft's leader, 0 if unknown

	mu      sync.Mutex
	leading bool            // the current ledger is a leader and may propose
	propCtx context.Context // canceled when leading ends: a blocked Propose returns
	cancel  context.CancelFunc
	pending map[uint64]chan error // leader: proposals by first tx id, awaiting commit

	// knownTx is the last transaction raft committed as this replica
	// knows it (the batch of the entry at its commit index): a follower's
	// reads say how far they are behind it.
	knownTx atomic.Uint64

	readSeq atomic.Uint64
	readMu  sync.Mutex
	reads   map[uint64]chan readAt // ReadIndex requests by context, until raft answers
	// Ready loop state.
	readyReads []pendingRead // answered by raft, waiting for applied to reach their index
	role       raft.StateType
	term       uint64        // raft's current term, from the HardStates
	leadTerm   uint64        // the term the leader ledger was opened in
	recent     []entryTx     // applied entries not yet known to be in the ledger's WAL, oldest first
	promoteAt  uint64        // raft index to apply before the ledger may lead
	promoting  chan struct{} // a running promotion, closed when it is done
	promoted   struct {      // its result, read after promoting is closed
		signaled, term uint64
		err            error
	}
	applied   uint64 // raft index applied
	signaled  uint64 // last tx of the leader ledger's proposals seen committed
	confState *pb.ConfState
	sinceComp int

	// Membership (members.go).
	memMu    sync.Mutex
	members  book          // the address book; replaced, never changed in place
	voters   []uint64      // raft's voters as applied
	confSeq  atomic.Uint64 // ids of this replica's configuration changes
	confWait map[uint64]chan error
	// gone: the replicas whose removal this one applied (since it
	// started), answered so when they connect; told: a peer answered
	// that this replica was removed.
	gone map[uint64]bool
	told chan struct{}

	// Raft snapshots (snapshot.go).
	snapCtx    context.Context // canceled by Stop: sends end
	snapCancel context.CancelFunc
	snapWG     sync.WaitGroup
	snapMu     sync.Mutex
	sending    map[uint64]bool // peers a snapshot is being sent to
	recvMu     sync.Mutex      // held while a received checkpoint is written or installed
	installed  atomic.Uint64   // snapshots installed since Start

	stop    chan struct{}
	done    chan struct{}
	errMu   sync.Mutex
	err     error
	stopped atomic.Bool
}

// Start opens (or creates) the replica in cfg.Dir and joins the cluster.
// The ledger starts as a follower.
func Start(cfg Config) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: cfg.Logger.With("node", cfg.NodeID), pending: make(map[uint64]chan error), reads: make(map[uint64]chan readAt),
		stop: make(chan struct{}), done: make(chan struct{}), confState: &pb.ConfState{}, sending: make(map[uint64]bool),
		confWait: make(map[uint64]chan error), gone: make(map[uint64]bool), told: make(chan struct{}, 1)}
	n.snapCtx, n.snapCancel = context.WithCancel(context.Background())
	if n.auth, err = server.NewAuthenticator(cfg.Tokens); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := writeIdentity(cfg); err != nil {
		return nil, err
	}
	// A checkpoint received before a crash is of no use: raft took it
	// only if the ledger installed it. An install a crash cut short is
	// finished or undone.
	if err := os.RemoveAll(n.snapDir()); err != nil {
		return nil, err
	}
	if err := ledger.FinishInstall(n.ledgerConfig()); err != nil {
		return nil, err
	}
	rl, fresh, err := openRaftLog(filepath.Join(cfg.Dir, "raft"))
	if err != nil {
		return nil, err
	}
	n.rl = rl
	if _, cs, err := rl.mem.InitialState(); err == nil && cs != nil {
		n.confState = cs // as of the compaction mark; later conf changes apply over it
	}
	if n.members, err = n.loadMembers(); err != nil {
		rl.close()
		return nil, err
	}
	n.voters = n.confState.GetVoters()
	l, err := ledger.OpenFollower(n.ledgerConfig())
	if err != nil {
		rl.close()
		return nil, err
	}
	n.cur.Store(l)
	rc := &raft.Config{
		ID: cfg.NodeID, ElectionTick: cfg.ElectionTicks, HeartbeatTick: 1, Storage: rl.mem,
		MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256, CheckQuorum: true, PreVote: true,
		// Only the leader's ledger proposes; a deposed leader's late
		// proposal must be dropped, not forwarded to the new leader.
		DisableProposalForwarding: true,
		StepDownOnRemoval:         true,
		Logger:                    &raftLogger{n.log},
	}
	if fresh && !cfg.Join {
		peers := make([]raft.Peer, 0, len(cfg.Peers))
		for _, id := range cfg.peerIDs() {
			m, _ := json.Marshal(n.members[id])
			peers = append(peers, raft.Peer{ID: id, Context: m})
		}
		n.rn = raft.StartNode(rc, peers)
	} else {
		// A joining replica starts outside any configuration and waits
		// for the leader's log or snapshot.
		n.rn = raft.RestartNode(rc)
	}
	addrs := map[uint64]string{}
	for id, m := range n.members {
		addrs[id] = m.Raft
	}
	n.tr, err = newTransport(&n.cfg, addrs,
		func(m *pb.Message) { n.rn.Step(context.Background(), m) }, n.rn.ReportUnreachable, n.receiveSnapshot,
		n.isGone, func() {
			select {
			case n.told <- struct{}{}:
			default:
			}
		}, n.log)
	if err != nil {
		n.rn.Stop()
		l.Close()
		rl.close()
		return nil, err
	}
	go n.run()
	return n, nil
}

func (n *Node) ledgerConfig() ledger.Config {
	c := n.cfg.Ledger
	c.Dir = filepath.Join(n.cfg.Dir, "ledger")
	return c
}

// writeIdentity refuses a directory of another cluster or node.
func writeIdentity(cfg Config) error {
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return err
	}
	p := filepath.Join(cfg.Dir, "identity")
	want := fmt.Sprintf("cluster_id=%d node_id=%d\n", cfg.ClusterID, cfg.NodeID)
	b, err := os.ReadFile(p)
	if err == nil {
		if string(b) != want {
			return fmt.Errorf("%w: %s holds %q, not %q", ErrConfig, cfg.Dir, string(b), want)
		}
		return nil
	}
	if !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(p, []byte(want), 0o644)
}

// Ledger returns the replica's current ledger. It changes when the replica
// starts or stops leading; a call on a replaced ledger fails with
// ledger.ErrClosed or an error wrapping *ledger.NotLeaderError, and the
// caller retries on the Node.
func (n *Node) Ledger() *ledger.Ledger { return n.cur.Load() }

// Leader returns raft's leader id, 0 if unknown.
func (n *Node) Leader() uint64 { return n.lead.Load() }

// ID returns the replica's node id.
func (n *Node) ID() uint64 { return n.cfg.NodeID }

// Err returns the error that stopped the replica, if any.
func (n *Node) Err() error {
	n.errMu.Lock()
	defer n.errMu.Unlock()
	return n.err
}

// Replicate implements ledger.Replicator for the leader ledger: it
// proposes the batch as one raft entry and returns once raft committed it
// (durable in the raft logs of a quorum), or with *ledger.NotLeaderError
// once this replica stops leading.
func (n *Node) Replicate(batch []byte, first, last uint64) error {
	ch := make(chan error, 1)
	n.mu.Lock()
	if !n.leading {
		n.mu.Unlock()
		return n.notLeader()
	}
	n.pending[first] = ch
	ctx := n.propCtx
	n.mu.Unlock()
	data := append([]byte(nil), batch...) // raft keeps it; the WAL stage reuses batch
	if err := n.rn.Propose(ctx, data); err != nil {
		n.mu.Lock()
		delete(n.pending, first)
		n.mu.Unlock()
		return fmt.Errorf("%w (%w)", n.notLeader(), err)
	}
	select {
	case err := <-ch:
		return err
	case <-n.done:
		return ledger.ErrClosed
	}
}

func (n *Node) notLeader() error {
	id := n.lead.Load()
	return &ledger.NotLeaderError{Leader: n.clientAddr(id), LeaderID: id}
}

// failPending ends every proposal's wait with err; no more are accepted
// until leading is set again.
func (n *Node) failPending(err error) {
	n.mu.Lock()
	n.leading = false
	if n.cancel != nil {
		n.cancel()
	}
	for k, ch := range n.pending {
		ch <- err
		delete(n.pending, k)
	}
	n.mu.Unlock()
}

// saveObserver, if set (benchmarks), sees how long each raft log write of
// entries took, on which replica and whether it leads.
var saveObserver func(node uint64, leader bool, took time.Duration)

// run is the Ready loop: persist, send, apply, advance, in raft's order.
func (n *Node) run() {
	defer close(n.done)
	tick := time.NewTicker(n.cfg.Tick)
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
			n.rn.Tick()
		case <-n.told:
			n.errMu.Lock()
			n.err = ErrRemoved
			n.errMu.Unlock()
			n.log.Error("replica stopped: a peer applied its removal", "err", ErrRemoved)
			return
		case rd := <-n.rn.Ready():
			if err := n.ready(rd); err != nil {
				n.errMu.Lock()
				n.err = err
				n.errMu.Unlock()
				n.log.Error("replica stopped", "err", err)
				return
			}
			n.rn.Advance()
		}
	}
}

func (n *Node) ready(rd raft.Ready) error {
	if err := n.joinPromotion(false); err != nil {
		return err
	}
	if rd.SoftState != nil {
		n.lead.Store(rd.SoftState.Lead)
		if l := n.cur.Load(); l.Follower() {
			l.SetLeader(rd.SoftState.Lead, n.clientAddr(rd.SoftState.Lead))
		}
		if rd.SoftState.RaftState != n.role {
			n.log.Info("raft role", "from", n.role, "to", rd.SoftState.RaftState, "leader", rd.SoftState.Lead)
		}
	}
	wasLeader, term := n.role == raft.StateLeader, n.term
	if rd.SoftState != nil {
		n.role = rd.SoftState.RaftState
	}
	if hs := rd.HardState; hs != nil && !raft.IsEmptyHardState(hs) {
		n.term = hs.GetTerm()
	}
	// Deposed, or leading again in a later term without this loop seeing
	// the steps between: the leader ledger's uncommitted proposals may be
	// gone, so it stops acknowledging at once and is rebuilt as a follower.
	if n.promoting != nil && (n.role != raft.StateLeader || n.term != term) {
		if err := n.joinPromotion(true); err != nil {
			return err
		}
	}
	// A promotion that has stored its leader ledger but not yet signaled
	// (the non-blocking join above ran first) is joined now, so that
	// leadTerm is its term: else the check below would take the new
	// leader for a stale one and demote it, and a second promotion could
	// then lead while the first one's proposals were still committing.
	if n.promoting != nil && !n.cur.Load().Follower() {
		if err := n.joinPromotion(true); err != nil {
			return err
		}
	}
	if !n.cur.Load().Follower() && (n.role != raft.StateLeader || n.term != n.leadTerm) {
		if err := n.demote(); err != nil {
			return err
		}
	}
	if !raft.IsEmptySnap(rd.Snapshot) {
		n.recvMu.Lock()
		err := n.installSnapshot(rd.Snapshot)
		n.recvMu.Unlock()
		if err != nil {
			return err
		}
	}
	// A leader that stays leader in its term sends its appends before its
	// own write, so that its fsync and the followers' overlap (raft
	// allows it: its HardState changes only in the commit index, and the
	// entries it commits are applied after this save). Anyone else
	// persists first: a vote or an acknowledgement must not go out before
	// what it promises is durable.
	early := n.role == raft.StateLeader && wasLeader && n.term == term
	if early {
		n.send(rd.Messages)
	}
	var t0 time.Time
	if saveObserver != nil {
		t0 = time.Now()
	}
	if err := n.rl.save(rd.HardState, rd.Entries, rd.MustSync); err != nil {
		return fmt.Errorf("ledgercluster: raft log: %w", err)
	}
	if saveObserver != nil && len(rd.Entries) > 0 {
		saveObserver(n.cfg.NodeID, n.role == raft.StateLeader, time.Since(t0))
	}
	if hs := rd.HardState; hs != nil && !raft.IsEmptyHardState(hs) {
		n.noteCommit(hs.GetCommit())
	}
	if n.role == raft.StateLeader && (!wasLeader || n.term != term) {
		last, _ := n.rl.mem.LastIndex()
		n.promoteAt = last // the new term's empty entry: all before it commits with it
	}
	if !early {
		n.send(rd.Messages)
	}
	for _, e := range rd.CommittedEntries {
		if err := n.apply(e); err != nil {
			return err
		}
	}
	n.answerReads(rd.ReadStates)
	if n.role == raft.StateLeader && n.promoteAt != 0 && n.applied >= n.promoteAt && n.promoting == nil && n.cur.Load().Follower() {
		n.promote()
	}
	return n.maybeCompact(len(rd.CommittedEntries))
}

// noteCommit raises knownTx to the last transaction of the batch at raft
// index commit, if this replica's log holds it (a new leader's empty entry
// or a configuration change holds none: the value stays).
func (n *Node) noteCommit(commit uint64) {
	if last, _ := n.rl.mem.LastIndex(); commit > last || commit == 0 {
		return // MemoryStorage panics past its last entry
	}
	ents, err := n.rl.mem.Entries(commit, commit+1, math.MaxUint64)
	if err != nil || len(ents) == 0 || ents[0].GetType() != pb.EntryNormal {
		return
	}
	if d := ents[0].GetData(); len(d) >= 16 {
		last := binary.LittleEndian.Uint64(d[4:]) + uint64(binary.LittleEndian.Uint32(d[12:])) - 1
		if last > n.knownTx.Load() {
			n.knownTx.Store(last)
		}
	}
}

func (n *Node) send(msgs []*pb.Message) {
	for _, m := range msgs {
		if m.GetType() == pb.MsgSnap {
			n.sendSnapshot(m)
			continue
		}
		n.tr.send(m)
	}
}

func (n *Node) apply(e *pb.Entry) error {
	n.applied = e.GetIndex()
	switch e.GetType() {
	case pb.EntryConfChange, pb.EntryConfChangeV2:
		return n.applyConfChange(e)
	case pb.EntryNormal:
	default:
		return fmt.Errorf("ledgercluster: entry %d of type %v", e.GetIndex(), e.GetType())
	}
	data := e.GetData()
	if len(data) == 0 {
		return nil // a new leader's empty entry
	}
	if len(data) < 16 {
		return fmt.Errorf("ledgercluster: entry %d: %d-byte batch", e.GetIndex(), len(data))
	}
	first := binary.LittleEndian.Uint64(data[4:])
	last := first + uint64(binary.LittleEndian.Uint32(data[12:])) - 1
	n.recent = append(n.recent, entryTx{index: e.GetIndex(), tx: last})
	if err := n.joinPromotion(true); err != nil { // normally none runs: see promote
		return err
	}
	l := n.cur.Load()
	if l.Follower() {
		if err := l.Apply(data); err != nil {
			return fmt.Errorf("ledgercluster: apply entry %d: %w", e.GetIndex(), err)
		}
		return nil
	}
	n.mu.Lock()
	ch := n.pending[first]
	delete(n.pending, first)
	n.mu.Unlock()
	if ch == nil {
		// Only this leader ledger proposes while it leads (no forwarding,
		// promotion after every earlier entry applied).
		return fmt.Errorf("ledgercluster: entry %d (tx %d) committed, not proposed by this leader", e.GetIndex(), first)
	}
	n.signaled = last
	ch <- nil
	return nil
}

// demote replaces the leader ledger by a follower: pending proposals fail
// with *ledger.NotLeaderError (so their waiters are never acknowledged),
// the ledger closes, and the directory reopens as a follower. Every batch
// the leader ledger wrote was committed first, so there is nothing to undo.
func (n *Node) demote() error {
	l := n.cur.Load()
	if l.Follower() {
		return nil
	}
	n.failPending(n.notLeader())
	if err := l.Close(); err != nil {
		n.log.Info("leader ledger closed", "err", err)
	}
	f, err := ledger.OpenFollower(n.ledgerConfig())
	if err != nil {
		return fmt.Errorf("ledgercluster: reopen as follower: %w", err)
	}
	if x, _ := f.Indexes(); uint64(x.Committed) < n.signaled {
		f.Close()
		return fmt.Errorf("ledgercluster: WAL ends at tx %d, raft committed tx %d to it", x.Committed, n.signaled)
	}
	f.SetLeader(n.lead.Load(), n.clientAddr(n.lead.Load()))
	n.cur.Store(f)
	n.log.Info("ledger follows", "tx", f.Stats().Indexes.Committed)
	return nil
}

// promote starts replacing the follower ledger by a leader, once
// everything committed before this term is applied. Reopening replays the
// WAL, which takes time, so it runs beside the Ready loop: raft goes on
// ticking and sending heartbeats (a blocked loop would let the followers'
// election timers fire). No normal entry commits meanwhile (this replica
// leads, and its ledger proposes only once open); joinPromotion collects
// the result.
func (n *Node) promote() {
	done := make(chan struct{})
	n.promoting = done
	term := n.term
	go func() {
		defer close(done)
		if err := n.cur.Load().Close(); err != nil {
			n.promoted.err = fmt.Errorf("ledgercluster: close follower: %w", err)
			return
		}
		n.mu.Lock()
		n.leading = true
		n.propCtx, n.cancel = context.WithCancel(context.Background())
		n.mu.Unlock()
		l, err := ledger.OpenReplicated(n.ledgerConfig(), n)
		if err != nil {
			n.promoted.err = fmt.Errorf("ledgercluster: reopen as leader: %w", err)
			return
		}
		n.promoted.signaled, n.promoted.term = uint64(l.Stats().Indexes.Committed), term
		n.cur.Store(l)
		n.log.Info("ledger leads", "tx", n.promoted.signaled, "term", term)
	}()
}

// joinPromotion takes the result of a finished promotion (waiting for it
// if wait), in the Ready loop; the channel's close orders the goroutine's
// writes before these reads.
func (n *Node) joinPromotion(wait bool) error {
	if n.promoting == nil {
		return nil
	}
	if !wait {
		select {
		case <-n.promoting:
		default:
			return nil
		}
	}
	<-n.promoting
	n.promoting = nil
	if n.promoted.err != nil {
		return n.promoted.err
	}
	n.signaled, n.leadTerm = n.promoted.signaled, n.promoted.term
	return nil
}

// compactEvery is how many applied entries pass between compactions;
// compactKeep and compactKeepBytes bound the entries kept in memory below
// the compaction bound, for peers a little behind; a peer further behind
// than compactLagBytes of entries no longer holds compaction back and
// catches up by snapshot. Variables so a test can compact a short log.
var (
	compactEvery     = 1024
	compactKeep      = uint64(4096)
	compactKeepBytes = uint64(16 << 20)
	compactLagBytes  = uint64(64 << 20)
)

// entryTx is an applied raft entry and the last tx of its batch.
type entryTx struct{ index, tx uint64 }

// maybeCompact drops raft entries from memory below what this replica's
// ledger WAL holds — a restart replays the raft log from the compaction
// mark on, so nothing below it may be missing from the WAL (a leader
// ledger writes a committed batch after the Ready loop signals it) — and,
// on the leader, below what every peer not too far behind has.
func (n *Node) maybeCompact(applied int) error {
	n.sinceComp += applied
	if n.sinceComp < compactEvery {
		return nil
	}
	n.sinceComp = 0
	x, err := n.cur.Load().Indexes()
	if err != nil {
		return nil // the ledger is changing role; next time
	}
	to := n.applied
	k := 0
	for k < len(n.recent) && n.recent[k].tx <= uint64(x.Committed) {
		k++
	}
	if k < len(n.recent) {
		to = n.recent[k].index - 1 // entries from here on may not be in the WAL yet
	}
	n.recent = append(n.recent[:0], n.recent[k:]...)
	if n.role == raft.StateLeader {
		for id, pr := range n.rn.Status().Progress {
			if id != n.cfg.NodeID && pr.Match < to && n.within(pr.Match, to, compactLagBytes) {
				to = pr.Match
			}
		}
	}
	first, _ := n.rl.mem.FirstIndex()
	// Keep up to compactKeep entries and compactKeepBytes below to.
	lo := first
	if to > compactKeep {
		lo = max(lo, to-compactKeep+1)
	}
	if lo > to {
		return nil
	}
	ents, err := n.rl.mem.Entries(lo, to+1, math.MaxUint64)
	if err != nil {
		return nil
	}
	var kept uint64
	i := len(ents)
	for i > 0 && kept+uint64(len(ents[i-1].GetData())) <= compactKeepBytes {
		kept += uint64(len(ents[i-1].GetData()))
		i--
	}
	if i == 0 {
		if lo == first {
			return nil // everything below to fits what is kept
		}
		to = lo - 1
	} else {
		to = ents[i-1].GetIndex()
	}
	if to < first {
		return nil
	}
	return n.rl.compact(to, n.confState)
}

// within reports whether the entries after match up to to are in memory
// and hold at most limit bytes.
func (n *Node) within(match, to, limit uint64) bool {
	ents, err := n.rl.mem.Entries(match+1, to+1, limit)
	return err == nil && uint64(len(ents)) == to-match
}

// Stop leaves the cluster: the Ready loop ends, the ledger closes (a
// leader's pending proposals fail), and the raft log and transport close.
func (n *Node) Stop() error {
	if n.stopped.Swap(true) {
		return n.Err()
	}
	close(n.stop)
	<-n.done
	if n.promoting != nil { // the loop has exited: its state is ours
		<-n.promoting
	}
	n.failPending(ledger.ErrClosed)
	n.snapCancel()
	n.snapWG.Wait()
	n.rn.Stop()
	terr := n.tr.close()
	lerr := n.cur.Load().Close()
	if errors.Is(lerr, ledger.ErrFailed) {
		lerr = nil // a leader failed by failPending
	}
	return errors.Join(n.Err(), terr, lerr, n.rl.close())
}
