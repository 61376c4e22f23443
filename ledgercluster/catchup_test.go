package ledgercluster

import (
	"context"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
)

// TestCatchUpAndRestartAfterCompaction: a follower down while the cluster
// writes catches up from the leader's raft log on restart (the leader
// compacts nothing it still needs); then every replica restarts from a
// compacted raft log (its mark keeps the configuration), elects a leader
// and goes on; the ledgers end identical with every op exactly once.
func TestCatchUpAndRestartAfterCompaction(t *testing.T) {
	every, keep := compactEvery, compactKeep
	compactEvery, compactKeep = 4, 8
	t.Cleanup(func() { compactEvery, compactKeep = every, keep })
	c := startInproc(t, 3, false)
	ld := c.leader(10 * time.Second)
	down := (ld + 1) % 3
	c.stopNode(down)
	acks := map[uint64]ledger.TxID{}
	ctx := context.Background()
	submit := func(ref uint64) {
		for {
			i := c.leader(10 * time.Second)
			res, err := c.nodes[i].SubmitAndWait(ctx, ledger.Deposit{Account: 1 + ref%10, Amount: 1, UserRef: ref}, ledger.Replicated)
			if err == nil {
				acks[ref] = res.ID
				if res.Fail == ledger.Duplicate {
					acks[ref] = res.DupOf
				}
				return
			}
			time.Sleep(5 * time.Millisecond) // the leader changed: retry with the same ref
		}
	}
	for ref := uint64(1); ref <= 100; ref++ {
		submit(ref)
	}
	if first, _ := c.nodes[ld].rl.mem.FirstIndex(); first > 2 {
		t.Errorf("the leader compacted to %d with a follower down since the start", first)
	}
	c.restart(down)
	c.converge(10 * time.Second)
	other := 3 - ld - down
	if first, _ := c.nodes[other].rl.mem.FirstIndex(); first < 50 {
		t.Errorf("the other follower kept its log from %d: no compaction to restart from", first)
	}
	for i := range c.nodes {
		c.stopNode(i)
	}
	for i := range c.nodes {
		c.restart(i)
	}
	for ref := uint64(101); ref <= 120; ref++ {
		submit(ref)
	}
	st := c.converge(10 * time.Second)
	t.Logf("%d transactions, hash %s", st.Applied, st.Hash)
	c.stop()
	checkDirs(t, c.dirs, acks)
}

// TestCatchUpBySnapshot: a follower is down while the leader writes far
// past its raft log's compaction (the leader compacts without waiting for
// it) and its ledger snapshots and prunes its WAL. Back, the follower
// catches up through raft's snapshot — the leader's ledger checkpoint —
// then takes the following entries. All three hashes end equal; the
// snapshot-installed replica, made leader, answers retries of refs
// acknowledged long before its snapshot as duplicates of the original;
// verify and the exactly-once checks pass on every directory.
func TestCatchUpBySnapshot(t *testing.T) {
	every, keep, lag := compactEvery, compactKeep, compactLagBytes
	compactEvery, compactKeep, compactLagBytes = 4, 8, 1
	t.Cleanup(func() { compactEvery, compactKeep, compactLagBytes = every, keep, lag })
	c := startInprocWith(t, 3, false, ledger.Config{MaxAccounts: inprocAccounts, SnapshotEvery: 1000, WALRetention: 300, WALSegmentSize: 256 << 10})
	ld := c.leader(10 * time.Second)
	down := (ld + 1) % 3
	downLast, _ := c.nodes[down].rl.mem.LastIndex()
	c.stopNode(down)
	ctx := context.Background()
	acks := map[uint64]ledger.TxID{}
	// submit sends refs from..to-1 in batches of 50 to the leader,
	// retrying a batch with the same refs after an error.
	submit := func(from, to uint64) {
		for ref := from; ref < to; ref += 50 {
			ops := make([]ledger.Op, 0, 50)
			for r := ref; r < min(ref+50, to); r++ {
				ops = append(ops, ledger.Deposit{Account: 1 + r%100, Amount: 1, UserRef: r})
			}
			for {
				res, err := c.nodes[c.leader(10*time.Second)].Ledger().SubmitBatchAndWait(ctx, ops, ledger.Committed)
				if err == nil {
					for _, r := range res {
						acks[r.UserRef] = r.ID
						if r.Fail == ledger.Duplicate {
							acks[r.UserRef] = r.DupOf
						}
					}
					break
				}
				time.Sleep(5 * time.Millisecond) // the leader changed: retry with the same refs
			}
		}
	}
	submit(1, 12001)
	if first, _ := c.nodes[ld].rl.mem.FirstIndex(); first <= downLast+1 {
		t.Fatalf("the leader's raft log starts at %d; the down follower has up to %d", first, downLast)
	}
	c.restart(down)
	c.converge(20 * time.Second)
	if got := c.nodes[down].installed.Load(); got == 0 {
		t.Fatal("the follower caught up without a snapshot")
	}
	submit(12001, 13001)
	st := c.converge(10 * time.Second)

	// The installed replica leads: a retry of an early ref is a duplicate.
	c.nodes[c.leader(10*time.Second)].rn.TransferLeadership(ctx, 0, uint64(down+1))
	if got := c.leader(10*time.Second, down); got != down {
		t.Fatalf("replica %d leads, not %d", got+1, down+1)
	}
	res, err := c.nodes[down].SubmitAndWait(ctx, ledger.Deposit{Account: 1 + 7%100, Amount: 1, UserRef: 7}, ledger.Replicated)
	if err != nil || res.Fail != ledger.Duplicate || res.DupOf != acks[7] {
		t.Fatalf("retry of ref 7 on the installed replica: %+v %v (acknowledged as tx %d)", res, err, acks[7])
	}
	t.Logf("%d transactions, hash %s, snapshots installed %d", st.Applied, st.Hash, c.nodes[down].installed.Load())
	c.converge(10 * time.Second)
	c.stop()
	checkDirs(t, c.dirs, acks)
}
