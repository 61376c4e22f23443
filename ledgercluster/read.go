package ledgercluster

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/lanework/lanework/ledger"
	"go.etcd.io/raft/v3"
)

// Linearizable reads go through raft's ReadIndex: the leader confirms with
// a quorum's heartbeat that it still leads and names its commit index at
// the time of the request; once this replica has applied up to that index,
// every op acknowledged before the read began is at or below the last
// transaction committed then, and the read waits for the ledger's Snapshot
// index to reach it before loading the balance. A deposed leader cannot
// confirm, so it never answers with a stale balance.

type readAt struct {
	tx  uint64 // last tx committed through the read's index
	err error
}

type pendingRead struct {
	index uint64
	ch    chan readAt
}

// ReadBalance returns account's balance linearizably: it reflects every
// op acknowledged (at Replicated or above) before the call began. Only
// the leader answers; a follower returns *ledger.NotLeaderError.
func (n *Node) ReadBalance(ctx context.Context, account uint64) (int64, error) {
	l := n.Ledger()
	if l.Follower() {
		return 0, n.notLeader()
	}
	id := n.readSeq.Add(1)
	ch := make(chan readAt, 1)
	n.readMu.Lock()
	n.reads[id] = ch
	n.readMu.Unlock()
	defer func() {
		n.readMu.Lock()
		delete(n.reads, id)
		n.readMu.Unlock()
	}()
	var rctx [8]byte
	binary.LittleEndian.PutUint64(rctx[:], id)
	if err := n.rn.ReadIndex(ctx, rctx[:]); err != nil {
		return 0, err
	}
	var at readAt
	select {
	case at = <-ch:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-n.done:
		return 0, ledger.ErrClosed
	}
	if at.err != nil {
		return 0, at.err
	}
	if n.Ledger() != l { // the role changed meanwhile: l may be behind
		return 0, n.notLeader()
	}
	if err := l.Wait(ctx, ledger.TxID(at.tx), ledger.Snapshot); err != nil {
		return 0, err
	}
	return l.Balance(account)
}

// answerReads runs in the Ready loop after the committed entries are
// applied: raft's answers join the reads waiting for applied to reach
// their index, and those it reached are answered with the last tx
// committed so far.
func (n *Node) answerReads(states []raft.ReadState) {
	for _, rs := range states {
		if len(rs.RequestCtx) != 8 {
			continue
		}
		n.readMu.Lock()
		ch := n.reads[binary.LittleEndian.Uint64(rs.RequestCtx)]
		n.readMu.Unlock()
		if ch != nil {
			n.readyReads = append(n.readyReads, pendingRead{index: rs.Index, ch: ch})
		}
	}
	if len(n.readyReads) == 0 {
		return
	}
	tx, err := n.committedTx()
	keep := n.readyReads[:0]
	for _, r := range n.readyReads {
		if r.index <= n.applied {
			r.ch <- readAt{tx: tx, err: err}
		} else {
			keep = append(keep, r)
		}
	}
	n.readyReads = keep
}

// committedTx is the last transaction raft committed to this replica's
// ledger: the leader's signaled proposals, or a follower's WAL.
func (n *Node) committedTx() (uint64, error) {
	l := n.cur.Load()
	if l.Follower() {
		return 0, fmt.Errorf("%w (the read's leadership ended)", n.notLeader())
	}
	return n.signaled, nil
}
