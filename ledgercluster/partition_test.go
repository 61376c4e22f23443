package ledgercluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
)

// TestPartitionMinorityLeader: the leader is cut off from both followers
// (TCP proxies on every link) while clients keep submitting to it and to
// the majority. Nothing the isolated leader is asked after the cut is
// acknowledged at Replicated, it stops leading within check-quorum's
// timeout, the majority elects a leader that acknowledges, and after the
// partition heals every replica holds the same ledger with every
// acknowledged op exactly once.
func TestPartitionMinorityLeader(t *testing.T) { testPartition(t, 0, 0) }

// TestPartitionDropDelay is TestPartitionMinorityLeader on a bad network
// throughout: every link drops 10% of the raft messages and delays the
// rest by up to 5 ms, before the cut, during it and after the heal.
func TestPartitionDropDelay(t *testing.T) { testPartition(t, 0.1, 5*time.Millisecond) }

func testPartition(t *testing.T, drop float64, delay time.Duration) {
	c := startInproc(t, 3, true)
	c.leader(10 * time.Second)
	c.setNetwork(drop, delay)
	old := c.leader(10 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var (
		mu      sync.Mutex
		acks    = map[uint64]ledger.TxID{}
		cutAt   atomic.Int64 // unix ns of the cut, 0 before
		wrongly atomic.Int64 // acknowledgements by the isolated leader of ops sent after the cut
		wg      sync.WaitGroup
	)
	submit := func(n *Node, ref uint64) error {
		sent := time.Now().UnixNano()
		res, err := n.SubmitAndWait(ctx, ledger.Deposit{Account: 1 + ref%50, Amount: 1, UserRef: ref}, ledger.Replicated)
		if err != nil {
			return err
		}
		id := res.ID
		if res.Fail == ledger.Duplicate {
			id = res.DupOf
		}
		mu.Lock()
		acks[ref] = id
		mu.Unlock()
		if at := cutAt.Load(); n == c.nodes[old] && at != 0 && sent > at {
			wrongly.Add(1)
		}
		return nil
	}
	// Client k retries every op until acknowledged, on node k first, then
	// on whichever node leads; the pinned client only ever asks the old
	// leader (and gives up on an op after a failure).
	for k := range 3 {
		wg.Go(func() {
			at := k
			for seq := uint64(1); ctx.Err() == nil; seq++ {
				ref := uint64(k+1)<<32 | seq
				for ctx.Err() == nil {
					err := submit(c.nodes[at], ref)
					if err == nil {
						break
					}
					var nl *ledger.NotLeaderError
					if !errors.As(err, &nl) && !errors.Is(err, ledger.ErrClosed) && !errors.Is(err, ledger.ErrFailed) && ctx.Err() == nil {
						t.Errorf("ref %x: %v", ref, err)
						return
					}
					at = (at + 1) % 3
					time.Sleep(5 * time.Millisecond) // back off before the next replica
				}
			}
		})
	}
	wg.Go(func() {
		for seq := uint64(1); ctx.Err() == nil; seq++ {
			if submit(c.nodes[old], 9<<32|seq) != nil {
				time.Sleep(5 * time.Millisecond)
			}
		}
	})

	time.Sleep(300 * time.Millisecond) // load runs meanwhile
	cutAt.Store(time.Now().UnixNano())
	c.isolate(old, true)
	var others []int
	for i := range c.nodes {
		if i != old {
			others = append(others, i)
		}
	}
	newLeader := c.leader(10*time.Second, others...)
	deadline := time.Now().Add(5 * time.Second)
	for c.nodes[old].Status().Leading {
		if time.Now().After(deadline) {
			t.Fatal("the isolated leader still leads 5 s after the cut")
		}
		time.Sleep(5 * time.Millisecond)
	}
	stepDown := time.Since(time.Unix(0, cutAt.Load()))
	before := len(snapshot(&mu, acks))
	time.Sleep(300 * time.Millisecond) // the majority acknowledges meanwhile
	if after := len(snapshot(&mu, acks)); after <= before {
		t.Errorf("the majority's leader %d acknowledged nothing (%d acks before, %d after)", newLeader+1, before, after)
	}
	c.isolate(old, false)
	time.Sleep(300 * time.Millisecond) // healed, on the same bad network: load runs meanwhile
	cancel()
	wg.Wait()
	c.setNetwork(0, 0)
	if n := wrongly.Load(); n != 0 {
		t.Errorf("the isolated leader acknowledged %d ops sent after the cut", n)
	}
	t.Logf("drop %.0f%%, delay up to %v: isolated leader %d stopped leading %v after the cut; replica %d leads; %d acknowledged",
		drop*100, delay, old+1, stepDown.Round(time.Millisecond), newLeader+1, len(snapshot(&mu, acks)))

	// Healed: everyone catches up to the same ledger.
	c.converge(10 * time.Second)
	c.stop()
	checkDirs(t, c.dirs, acks)
}

func snapshot(mu *sync.Mutex, m map[uint64]ledger.TxID) map[uint64]ledger.TxID {
	mu.Lock()
	defer mu.Unlock()
	out := make(map[uint64]ledger.TxID, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
