package ledgercluster

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
)

// TestClientFollowsLeader: a Client that starts at a follower reaches the
// leader, keeps going after the leader stops, and a retry of an
// acknowledged op is answered as a duplicate of it.
func TestClientFollowsLeader(t *testing.T) {
	var addrs []string
	var srvs []*http.Server
	lns := make([]net.Listener, 3)
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		addrs = append(addrs, ln.Addr().String())
	}
	c := startInproc(t, 3, false, addrs...)
	ld := c.leader(10 * time.Second)
	for i, n := range c.nodes {
		srv := &http.Server{Handler: Handler(n)}
		srvs = append(srvs, srv)
		go srv.Serve(lns[i])
	}
	defer func() {
		for _, s := range srvs {
			s.Close()
		}
	}()
	cl := NewClient(addrs[(ld+1)%3], addrs[(ld+2)%3], addrs[ld])
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r1, err := cl.Submit(ctx, OpRequest{Kind: "deposit", Account: 1, Amount: 5, UserRef: 77})
	if err != nil || r1.Fail != "ok" {
		t.Fatalf("first submit: %+v %v", r1, err)
	}
	// A follower's read says as of which transaction, and how far that
	// is behind what it knows raft committed: caught up, nothing.
	c.converge(10 * time.Second)
	f := (ld + 1) % 3
	resp, err := http.Get("http://" + addrs[f] + "/v1/balance/1")
	if err != nil {
		t.Fatal(err)
	}
	var bal map[string]int64
	err = json.NewDecoder(resp.Body).Decode(&bal)
	resp.Body.Close()
	if st := c.nodes[f].Status(); err != nil || bal["balance"] != 5 || bal["applied"] < int64(r1.ID) || bal["behind"] != 0 || st.Committed != st.Applied {
		t.Fatalf("follower read %v (%v), status %+v", bal, err, st)
	}
	srvs[ld].Close()
	c.stopNode(ld)
	r2, err := cl.Submit(ctx, OpRequest{Kind: "deposit", Account: 1, Amount: 5, UserRef: 77})
	if err != nil || r2.Fail != ledger.Duplicate.String() || r2.DupOf != r1.ID {
		t.Fatalf("retry on the new leader: %+v %v (first: %+v)", r2, err, r1)
	}
	if _, err := cl.Submit(ctx, OpRequest{Kind: "deposit", Account: 1, Amount: 5}); err != ErrNoRef {
		t.Fatalf("no user_ref: %v", err)
	}
	if _, err := cl.Submit(ctx, OpRequest{Kind: "nope", UserRef: 78}); err == nil {
		t.Fatal("a bad kind was accepted")
	}
}
