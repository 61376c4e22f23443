package ledgercluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Membership. A replica is added or removed at runtime through a raft
// configuration change proposed on the leader: the ConfChange's context
// carries the new replica's addresses, so every replica learns them when
// it applies the change, in log order. The address book (ids to raft and
// client addresses) starts from Config.Peers and Config.ClientAddrs, is
// kept in Dir/members.json as changes apply, and travels with a raft
// snapshot (a replica that installs one learns the members added before
// it). A new replica starts with Config.Join: it waits, outside the
// configuration, for the leader, which sends it the log or, past the
// compacted log, a snapshot. A removed replica stops (ErrRemoved) when it
// applies its removal, or when a replica that applied it answers its
// connection so (it may never get the entry: see transport); a removed
// leader steps down first (raft's StepDownOnRemoval). Replica ids are
// never reused.

// ErrRemoved stops a replica that a configuration change removed.
var ErrRemoved = errors.New("ledgercluster: this replica was removed from the cluster")

// Member is one replica in the address book.
type Member struct {
	ID     uint64 `json:"id"`
	Raft   string `json:"raft"`
	Client string `json:"client,omitempty"` // the HTTP/JSON API (Handler)
	TCP    string `json:"tcp,omitempty"`    // the ledger server's msgpack protocol (server.NewReplica)
	Voter  bool   `json:"voter"`            // in raft's configuration as this replica applied it
}

type book map[uint64]Member

func (n *Node) membersPath() string { return filepath.Join(n.cfg.Dir, "members.json") }

// loadMembers returns the address book: the file's if there is one, else
// the configuration's.
func (n *Node) loadMembers() (book, error) {
	b := book{}
	data, err := os.ReadFile(n.membersPath())
	if err == nil {
		var ms []Member
		if err := json.Unmarshal(data, &ms); err != nil {
			return nil, fmt.Errorf("ledgercluster: %s: %w", n.membersPath(), err)
		}
		for _, m := range ms {
			// The configuration fills what the file lacks (addresses
			// given after the replica's first start).
			if m.Client == "" {
				m.Client = n.cfg.ClientAddrs[m.ID]
			}
			if m.TCP == "" {
				m.TCP = n.cfg.TCPAddrs[m.ID]
			}
			b[m.ID] = m
		}
		return b, nil
	}
	if !os.IsNotExist(err) {
		return nil, err
	}
	for id, a := range n.cfg.Peers {
		b[id] = Member{ID: id, Raft: a, Client: n.cfg.ClientAddrs[id], TCP: n.cfg.TCPAddrs[id]}
	}
	return b, nil
}

// encodeMembers is the address book in the form members.json and a
// snapshot carry.
func encodeMembers(b book) []byte {
	ms := slices.SortedFunc(maps.Values(b), func(x, y Member) int { return cmp.Compare(x.ID, y.ID) })
	data, _ := json.Marshal(ms) // plain strings and ints: it cannot fail
	return data
}

// saveMembers writes the address book durably (a new file, renamed over).
func (n *Node) saveMembers(b book) error {
	tmp := n.membersPath() + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(encodeMembers(b))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, n.membersPath())
	}
	if err == nil {
		err = syncDir(n.cfg.Dir)
	}
	return err
}

// setMembers replaces the address book (Ready loop only, or Start) and
// points the transport at it.
func (n *Node) setMembers(b book) {
	n.memMu.Lock()
	n.members = b
	n.memMu.Unlock()
	addrs := map[uint64]string{}
	for id, m := range b {
		addrs[id] = m.Raft
	}
	n.tr.setPeers(addrs)
}

// isGone reports whether this replica applied replica id's removal.
func (n *Node) isGone(id uint64) bool {
	n.memMu.Lock()
	defer n.memMu.Unlock()
	return n.gone[id]
}

// clientAddr returns replica id's client address, "" if unknown.
func (n *Node) clientAddr(id uint64) string {
	n.memMu.Lock()
	defer n.memMu.Unlock()
	return n.members[id].Client
}

var _ server.Replica = (*Node)(nil)

// TCPAddr returns replica id's address for the ledger server's msgpack
// protocol, "" if unknown (server.Replica).
func (n *Node) TCPAddr(id uint64) string {
	n.memMu.Lock()
	defer n.memMu.Unlock()
	return n.members[id].TCP
}

// Members returns the address book, sorted by id, with raft's voters as
// this replica applied the configuration.
func (n *Node) Members() []Member {
	n.memMu.Lock()
	defer n.memMu.Unlock()
	voters := n.voters
	out := make([]Member, 0, len(n.members))
	for _, m := range n.members {
		m.Voter = slices.Contains(voters, m.ID)
		out = append(out, m)
	}
	slices.SortFunc(out, func(x, y Member) int { return cmp.Compare(x.ID, y.ID) })
	return out
}

// AddReplica adds replica m.ID, reachable for raft at m.Raft and for
// clients at m.Client (HTTP) and m.TCP (msgpack), to the cluster, and
// returns once the change is applied here. Only the leader proposes (else *ledger.NotLeaderError);
// raft takes one configuration change at a time, so a change proposed
// while another is pending is dropped and ctx ends the wait.
func (n *Node) AddReplica(ctx context.Context, m Member) error {
	id, raftAddr := m.ID, m.Raft
	if id == 0 {
		return fmt.Errorf("%w: replica id must be non-zero", ErrConfig)
	}
	if _, _, err := net.SplitHostPort(raftAddr); err != nil {
		return fmt.Errorf("%w: raft address %q: %w", ErrConfig, raftAddr, err)
	}
	for _, a := range []string{m.Client, m.TCP} {
		if _, _, err := net.SplitHostPort(a); a != "" && err != nil {
			return fmt.Errorf("%w: client address %q: %w", ErrConfig, a, err)
		}
	}
	m.Voter = false
	data, _ := json.Marshal(m)
	return n.changeConf(ctx, pb.ConfChangeAddNode, id, data)
}

// RemoveReplica removes replica id from the cluster and returns once the
// change is applied here; see AddReplica.
func (n *Node) RemoveReplica(ctx context.Context, id uint64) error {
	n.memMu.Lock()
	known := slices.Contains(n.voters, id)
	n.memMu.Unlock()
	if !known {
		return fmt.Errorf("%w: replica %d is not a member", ErrConfig, id)
	}
	return n.changeConf(ctx, pb.ConfChangeRemoveNode, id, nil)
}

func (n *Node) changeConf(ctx context.Context, typ pb.ConfChangeType, id uint64, data []byte) error {
	if n.Ledger().Follower() {
		return n.notLeader()
	}
	cid := n.confSeq.Add(1)
	ch := make(chan error, 1)
	n.memMu.Lock()
	n.confWait[cid] = ch
	n.memMu.Unlock()
	defer func() {
		n.memMu.Lock()
		delete(n.confWait, cid)
		n.memMu.Unlock()
	}()
	cc := &pb.ConfChange{Id: proto.Uint64(cid<<16 | n.cfg.NodeID&0xffff), Type: typ.Enum(), NodeId: proto.Uint64(id), Context: data}
	if err := n.rn.ProposeConfChange(ctx, cc); err != nil {
		if errors.Is(err, raft.ErrProposalDropped) {
			return n.notLeader()
		}
		return err
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return fmt.Errorf("ledgercluster: configuration change not applied (another pending, or leadership lost): %w", ctx.Err())
	case <-n.done:
		select {
		case err := <-ch: // applied, then the loop ended: this replica was removed
			return err
		default:
			return ledger.ErrClosed
		}
	}
}

// applyConfChange runs in the Ready loop for a committed configuration
// change: raft applies it, the address book and the transport follow, and
// a waiting AddReplica or RemoveReplica of this replica returns.
func (n *Node) applyConfChange(e *pb.Entry) error {
	var cc pb.ConfChangeI
	var id uint64
	switch e.GetType() {
	case pb.EntryConfChange:
		c := &pb.ConfChange{}
		if err := proto.Unmarshal(e.GetData(), c); err != nil {
			return fmt.Errorf("ledgercluster: conf change at %d: %w", e.GetIndex(), err)
		}
		cc, id = c, c.GetId()
	default:
		c := &pb.ConfChangeV2{}
		if err := proto.Unmarshal(e.GetData(), c); err != nil {
			return fmt.Errorf("ledgercluster: conf change at %d: %w", e.GetIndex(), err)
		}
		cc = c
	}
	n.confState = n.rn.ApplyConfChange(cc)
	v2 := cc.AsV2()
	n.memMu.Lock()
	b := maps.Clone(n.members)
	n.voters = slices.Clone(n.confState.GetVoters())
	n.memMu.Unlock()
	removed := false
	for _, ch := range v2.GetChanges() {
		nid := ch.GetNodeId()
		switch ch.GetType() {
		case pb.ConfChangeAddNode, pb.ConfChangeAddLearnerNode:
			var m Member
			if err := json.Unmarshal(v2.GetContext(), &m); err == nil && m.ID == nid {
				b[nid] = m
			} else if _, ok := b[nid]; !ok {
				n.log.Warn("replica added without addresses", "id", nid)
			}
		case pb.ConfChangeRemoveNode:
			delete(b, nid)
			removed = removed || nid == n.cfg.NodeID
			n.memMu.Lock()
			n.gone[nid] = true
			n.memMu.Unlock()
		}
	}
	if err := n.saveMembers(b); err != nil {
		return fmt.Errorf("ledgercluster: save members: %w", err)
	}
	n.setMembers(b)
	n.log.Info("configuration changed", "index", e.GetIndex(), "voters", n.confState.GetVoters())
	n.memMu.Lock()
	if ch := n.confWait[id>>16]; ch != nil && id&0xffff == n.cfg.NodeID&0xffff {
		ch <- nil
	}
	n.memMu.Unlock()
	if removed {
		return ErrRemoved
	}
	return nil
}
