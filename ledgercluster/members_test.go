package ledgercluster

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
)

// TestMembershipAddRemove: a fourth replica joins a running cluster whose
// leader compacted its raft log (so it catches up by snapshot), then the
// leader removes itself: it stops with ErrRemoved, the other three elect a
// leader and go on. Every remaining replica ends with the same ledger and
// address book, every acknowledged op exactly once.
func TestMembershipAddRemove(t *testing.T) {
	every, keep := compactEvery, compactKeep
	compactEvery, compactKeep = 4, 8
	t.Cleanup(func() { compactEvery, compactKeep = every, keep })
	c := startInprocWith(t, 3, false, ledger.Config{MaxAccounts: inprocAccounts, SnapshotEvery: 500, WALRetention: 100})
	ctx := context.Background()
	acks := map[uint64]ledger.TxID{}
	submit := func(from, to uint64) {
		for ref := from; ref < to; ref++ {
			for {
				res, err := c.nodes[c.leader(10*time.Second)].SubmitAndWait(ctx, ledger.Deposit{Account: 1 + ref%100, Amount: 1, UserRef: ref}, ledger.Replicated)
				if err == nil {
					acks[ref] = res.ID
					if res.Fail == ledger.Duplicate {
						acks[ref] = res.DupOf
					}
					break
				}
				time.Sleep(5 * time.Millisecond) // the leader changed: retry with the same ref
			}
		}
	}
	submit(1, 300)
	ld := c.leader(10 * time.Second)
	if first, _ := c.nodes[ld].rl.mem.FirstIndex(); first < 100 {
		t.Fatalf("the leader's raft log starts at %d: a new replica would not need a snapshot", first)
	}

	// Add replica 4 (the leader waits for no one: the change needs a
	// quorum of the old three), then start it.
	n4 := len(c.nodes)
	ln := c.join(4) // listens first, so the address is known; it waits outside the configuration
	if ln != n4 {
		t.Fatal("join index")
	}
	addr := c.cfgs[n4].Peers[4]
	if err := c.nodes[ld].AddReplica(ctx, Member{ID: 4, Raft: addr}); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[(ld+1)%3].AddReplica(ctx, Member{ID: 5, Raft: "127.0.0.1:1"}); err == nil {
		t.Error("a follower proposed a configuration change")
	} else if nl := (*ledger.NotLeaderError)(nil); !errors.As(err, &nl) {
		t.Errorf("follower's AddReplica: %v", err)
	}
	submit(300, 400)
	c.converge(20 * time.Second)
	if c.nodes[n4].installed.Load() == 0 {
		t.Fatal("the new replica caught up without a snapshot")
	}

	// The leader removes itself.
	if err := c.nodes[ld].RemoveReplica(ctx, uint64(ld+1)); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[ld].Stop(); !errors.Is(err, ErrRemoved) {
		t.Fatalf("the removed leader stopped with %v", err)
	}
	c.nodes[ld] = nil
	submit(400, 500)
	st := c.converge(20 * time.Second)
	var want []uint64
	for i := range c.nodes {
		if i != ld {
			want = append(want, c.cfgs[i].NodeID)
		}
	}
	slices.Sort(want)
	for i, n := range c.nodes {
		if n == nil {
			continue
		}
		var got []uint64
		for _, m := range n.Members() {
			if m.Voter {
				got = append(got, m.ID)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("replica %d: voters %v, want %v", i+1, got, want)
		}
	}
	t.Logf("%d transactions, hash %s", st.Applied, st.Hash)
	c.stop()
	var dirs []string
	for i, d := range c.dirs {
		if i != ld {
			dirs = append(dirs, d)
		}
	}
	checkDirs(t, dirs, acks)
}
