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
