package ledgercluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
	lclient "github.com/lanework/lanework/ledger/client"
	"github.com/lanework/lanework/ledger/server"
	"github.com/lanework/lanework/ledger/wire"
)

// TestMsgpackClientFollowsLeader: every replica runs the ledger server's
// msgpack protocol (server.NewReplica). A follower refuses a submit with
// not_leader naming the leader's TCP address and answers reads from its
// state; clients started at a follower with client.WithCluster reach the
// leader, and when the leader stops mid-load they go on with the next one,
// retrying with the same user_refs. Every acknowledged op is then in every
// replica's ledger exactly once. With Config.Ledger.Index the leader keeps
// the history and query indexes and a follower does not (index_off).
func TestMsgpackClientFollowsLeader(t *testing.T) {
	var tcp []string
	var lns []net.Listener
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns, tcp = append(lns, ln), append(tcp, ln.Addr().String())
	}
	// The nodes learn the TCP addresses as a ledgercluster user configures
	// them: Config.TCPAddrs.
	c := startInprocEdit(t, 3, false, ledger.Config{MaxAccounts: inprocAccounts, Index: true}, func(cfg *Config) {
		cfg.TCPAddrs = map[uint64]string{}
		for i, a := range tcp {
			cfg.TCPAddrs[uint64(i+1)] = a
		}
	})
	srvs := make([]*server.Server, 3)
	start := func(i int) {
		if lns[i] == nil {
			ln, err := net.Listen("tcp", tcp[i])
			if err != nil {
				t.Fatal(err)
			}
			lns[i] = ln
		}
		s, err := server.NewReplica(c.nodes[i], server.Config{HTTPAddr: "off", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		srvs[i] = s
		go s.Serve(lns[i])
	}
	stop := func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srvs[i].Shutdown(ctx)
		srvs[i], lns[i] = nil, nil
	}
	for i := range 3 {
		start(i)
	}
	t.Cleanup(func() {
		for i, s := range srvs {
			if s != nil {
				stop(i)
			}
		}
	})
	ld := c.leader(10 * time.Second)
	f := (ld + 1) % 3
	ctx := context.Background()
	c.converge(10 * time.Second) // the follower has the accounts

	// A plain client at a follower: not_leader names the leader; reads
	// answer from the follower.
	pc, err := lclient.Dial(ctx, tcp[f])
	if err != nil {
		t.Fatal(err)
	}
	_, err = pc.SubmitAndWait(ctx, ledger.Deposit{Account: 1, Amount: 1, UserRef: 1}, ledger.Committed)
	var we *wire.Error
	if !errors.Is(err, ledger.ErrNotLeader) || !errors.As(err, &we) || we.Message != tcp[ld] {
		t.Fatalf("submit at a follower: %v (leader's address %s)", err, tcp[ld])
	}
	if _, err := pc.Balance(ctx, 1); err != nil {
		t.Fatalf("balance at a follower: %v", err)
	}
	if _, err := pc.QueryTransfers(ctx, ledger.TransferFilter{Limit: 1}); !errors.Is(err, ledger.ErrIndexOff) {
		t.Fatalf("query at a follower: %v, want index_off", err)
	}
	pc.Close()
	lc, err := lclient.Dial(ctx, tcp[ld])
	if err != nil {
		t.Fatal(err)
	}
	res, err := lc.SubmitAndWait(ctx, ledger.Deposit{Account: 2, Amount: 1}, ledger.Committed)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := lc.QueryTransfers(ctx, ledger.TransferFilter{Limit: 10, WaitFor: res.ID}); err != nil || len(p.Transfers) != 1 || p.Transfers[0].ID != res.ID {
		t.Fatalf("query at the leader: %v, %d results, want tx %d", err, len(p.Transfers), res.ID)
	}
	lc.Close()

	var (
		mu   sync.Mutex
		acks = map[uint64]ledger.TxID{}
		wg   sync.WaitGroup
	)
	lctx, cancel := context.WithCancel(ctx)
	for k := range 3 {
		cl, err := lclient.Dial(ctx, tcp[f], lclient.WithCluster(tcp...))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer cl.Close()
			for seq := uint64(1); lctx.Err() == nil; seq++ {
				ref := uint64(k+1)<<32 | seq
				res, err := cl.SubmitAndWait(lctx, ledger.Deposit{Account: 1 + ref%100, Amount: 1, UserRef: ref}, ledger.Committed)
				if err != nil {
					if lctx.Err() == nil {
						t.Errorf("ref %x: %v", ref, err)
					}
					return
				}
				id := res.ID
				if res.Fail == ledger.Duplicate {
					id = res.DupOf
				}
				mu.Lock()
				acks[ref] = id
				mu.Unlock()
			}
		})
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acks)
	}
	waitAcks := func(n int) {
		for deadline := time.Now().Add(20 * time.Second); count() < n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d acknowledgements, want %d", count(), n)
			}
		}
	}
	waitAcks(200)
	stop(ld)
	c.stopNode(ld)
	before := count()
	waitAcks(before + 200) // the clients found the new leader
	c.restart(ld)
	start(ld)
	waitAcks(count() + 100)
	cancel()
	wg.Wait()
	c.converge(20 * time.Second)
	c.stop()
	checkDirs(t, c.dirs, acks)
}
