package ledgercluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lanework/lanework/ledger"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Catch-up past the compacted raft log. A replica whose next entry the
// leader has compacted away gets raft's snapshot instead: raft hands the
// Ready loop a MsgSnap whose metadata is the leader's compaction mark
// (index I, term, configuration). The leader's replica sends it with a
// checkpoint of its ledger (ledger.WriteCheckpoint: the newest ledger
// snapshot plus the WAL from there through the last committed batch) on a
// connection of its own (snapstream.go). Its ledger holds every batch up
// to I (the log is compacted only below what the WAL holds), so the
// checkpoint's state is at or past I; the entries after I that it already
// holds are skipped by Apply, as after any restart.
//
// The receiver writes the checkpoint to Dir/snap, syncs it and only then
// steps the MsgSnap into raft; when raft takes it, the Ready loop closes
// the follower ledger, installs the checkpoint (ledger.InstallCheckpoint
// swaps the directory), reopens it and then records the snapshot in the
// raft log. A crash before that record leaves the old raft log and the
// new ledger, which replays raft's entries idempotently; the leader sends
// the snapshot again.

// snapDir holds received checkpoints until raft takes or drops them.
func (n *Node) snapDir() string { return filepath.Join(n.cfg.Dir, "snap") }

// sendSnapshot starts sending m (a MsgSnap from the Ready loop) with a
// checkpoint of this replica's ledger, unless a send to that peer is
// running; raft hears how it went through ReportSnapshot.
func (n *Node) sendSnapshot(m *pb.Message) {
	to := m.GetTo()
	n.snapMu.Lock()
	if n.sending[to] {
		n.snapMu.Unlock()
		return
	}
	n.sending[to] = true
	n.snapMu.Unlock()
	// The snapshot's data on the wire is the address book: a replica that
	// installs it learns the members added before the snapshot.
	mm := proto.Clone(m).(*pb.Message) // raft's snapshot is its storage's
	n.memMu.Lock()
	mm.Snapshot.Data = encodeMembers(n.members)
	n.memMu.Unlock()
	msg, err := proto.Marshal(mm)
	if err != nil {
		n.log.Error("marshal raft snapshot message", "err", err)
		return
	}
	n.snapWG.Go(func() {
		var last ledger.TxID
		err := n.tr.sendSnapshot(n.snapCtx, to, msg, func(w io.Writer) error {
			var err error
			last, err = n.Ledger().WriteCheckpoint(n.snapCtx, w)
			return err
		})
		status := raft.SnapshotFinish
		if err != nil {
			status = raft.SnapshotFailure
			n.log.Warn("raft snapshot not sent", "to", to, "index", m.GetSnapshot().GetMetadata().GetIndex(), "err", err)
		} else {
			n.log.Info("raft snapshot sent", "to", to, "index", m.GetSnapshot().GetMetadata().GetIndex(), "tx", last)
		}
		n.snapMu.Lock()
		delete(n.sending, to)
		n.snapMu.Unlock()
		n.rn.ReportSnapshot(to, status)
	})
}

// receiveSnapshot is the transport's: it stores the checkpoint durably,
// then steps m into raft with the file's path as the snapshot's data.
func (n *Node) receiveSnapshot(m *pb.Message, body io.Reader) error {
	n.recvMu.Lock() // one at a time: each replaces any earlier file
	defer n.recvMu.Unlock()
	md := m.GetSnapshot().GetMetadata()
	if err := os.RemoveAll(n.snapDir()); err != nil {
		return err
	}
	if err := os.MkdirAll(n.snapDir(), 0o755); err != nil {
		return err
	}
	path := filepath.Join(n.snapDir(), fmt.Sprintf("%016x-%016x.ckpt", md.GetTerm(), md.GetIndex()))
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	_, err = io.Copy(f, body)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err == nil {
		err = syncDir(n.snapDir())
	}
	if err != nil {
		os.Remove(path + ".tmp")
		return err
	}
	// Locally the data is the file's path, then the address book.
	m.Snapshot.Data = append([]byte(path+"\x00"), m.Snapshot.Data...)
	return n.rn.Step(context.Background(), m)
}

// installSnapshot runs in the Ready loop for a snapshot raft took: the
// ledger becomes the checkpoint's, then the raft log records the snapshot.
func (n *Node) installSnapshot(snap *pb.Snapshot) error {
	path, members, _ := strings.Cut(string(snap.GetData()), "\x00")
	if !strings.HasPrefix(path, n.snapDir()) {
		return fmt.Errorf("ledgercluster: raft snapshot at %d without a checkpoint", snap.GetMetadata().GetIndex())
	}
	var ms []Member
	if err := json.Unmarshal([]byte(members), &ms); err != nil {
		return fmt.Errorf("ledgercluster: raft snapshot at %d: members: %w", snap.GetMetadata().GetIndex(), err)
	}
	l := n.cur.Load()
	if !l.Follower() {
		return fmt.Errorf("ledgercluster: raft snapshot at %d on a leading ledger", snap.GetMetadata().GetIndex())
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("ledgercluster: raft snapshot: %w", err)
	}
	defer f.Close()
	if err := l.Close(); err != nil {
		n.log.Info("follower ledger closed", "err", err)
	}
	last, err := ledger.InstallCheckpoint(n.ledgerConfig(), bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return fmt.Errorf("ledgercluster: install raft snapshot at %d: %w", snap.GetMetadata().GetIndex(), err)
	}
	nl, err := ledger.OpenFollower(n.ledgerConfig())
	if err != nil {
		return fmt.Errorf("ledgercluster: open the installed ledger: %w", err)
	}
	nl.SetLeader(n.lead.Load(), n.clientAddr(n.lead.Load()))
	n.installed.Add(1) // before the ledger shows: whoever sees it sees the count
	n.cur.Store(nl)
	if err := n.rl.applySnapshot(snap); err != nil {
		return fmt.Errorf("ledgercluster: raft log: %w", err)
	}
	md := snap.GetMetadata()
	n.applied, n.confState, n.recent = md.GetIndex(), md.GetConfState(), n.recent[:0]
	b := book{}
	for _, m := range ms {
		b[m.ID] = m
	}
	if err := n.saveMembers(b); err != nil {
		return fmt.Errorf("ledgercluster: save members: %w", err)
	}
	n.memMu.Lock()
	n.voters = slices.Clone(md.GetConfState().GetVoters())
	n.memMu.Unlock()
	n.setMembers(b)
	n.log.Info("raft snapshot installed", "index", md.GetIndex(), "tx", last)
	return os.RemoveAll(n.snapDir())
}
