package ledgercluster

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestFailoverKill9: three replica processes under load at Replicated
// from several clients; at a random moment of each trial (LEDGERCLUSTER_TRIALS,
// default 3, one of each; make soak runs 20) a replica is killed with SIGKILL and
// restarted once the cluster acknowledged again: the leader, a follower,
// or the leader and then the next leader, in turn. At the end every acknowledged op is in every
// replica's WAL exactly once under the id it was acknowledged with, the
// replicas' ledgers are identical (dumps byte for byte, hashes) and
// verify passes on each.
func TestFailoverKill9(t *testing.T) {
	trials := 3
	if s := os.Getenv("LEDGERCLUSTER_TRIALS"); s != "" {
		var err error
		if trials, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	c := newProcCluster(t, 3)
	c.leader(10 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cls, errc := runLoad(ctx, c, 4)
	var gaps []time.Duration
	for trial := range trials {
		time.Sleep(time.Duration(100+rand.IntN(400)) * time.Millisecond) // load runs meanwhile; a random moment
		ld := c.leader(10 * time.Second)
		switch trial % 3 {
		case 0, 2: // the leader; on 2, then the next leader too
			for k := range 1 + trial%3/2 {
				killed := time.Now()
				c.kill(ld)
				first := waitAck(t, cls, killed, 10*time.Second)
				gaps = append(gaps, first.Sub(killed))
				next := c.leader(10 * time.Second)
				t.Logf("trial %d.%d: killed leader %d; replica %d leads; first acknowledgement %v later", trial, k, ld+1, next+1, first.Sub(killed))
				c.start(ld)
				ld = next
			}
		case 1: // a follower
			f := (ld + 1 + rand.IntN(2)) % 3
			killed := time.Now()
			c.kill(f)
			waitAck(t, cls, killed, 10*time.Second)
			t.Logf("trial %d: killed follower %d", trial, f+1)
			c.start(f)
		}
	}
	time.Sleep(300 * time.Millisecond)
	cancel()
	for range cls {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	slices.Sort(gaps)
	t.Logf("kill -> first ack: P50 %v, max %v over %d leader kills (election timeout 200-400 ms)", gaps[len(gaps)/2], gaps[len(gaps)-1], len(gaps))
	checkReplicas(t, c, cls)
}

// waitAck waits for an acknowledgement after since and returns the time
// of the first (clients record each one; polling only finds out sooner).
func waitAck(t *testing.T, cls []*client, since time.Time, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var first time.Time
		for _, cl := range cls {
			if at, ok := cl.firstAckAfter(since); ok && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
		if !first.IsZero() {
			return first
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no acknowledgement within %v of the kill", timeout)
	return time.Time{}
}
