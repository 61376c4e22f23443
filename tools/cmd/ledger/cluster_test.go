package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledgercluster"
)

// TestClusterAddRemove: `ledger cluster add` sent to a follower reaches
// the leader (following not_leader) and a joining replica becomes a
// voter; `ledger cluster remove` takes it out again; `status` lists the
// members; bad input is a usage error.
func TestClusterAddRemove(t *testing.T) {
	const size = 4
	var raftLns, httpLns []net.Listener
	peers, clients := map[uint64]string{}, map[uint64]string{}
	for i := range size {
		for _, lns := range []*[]net.Listener{&raftLns, &httpLns} {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			*lns = append(*lns, ln)
		}
		peers[uint64(i+1)], clients[uint64(i+1)] = raftLns[i].Addr().String(), httpLns[i].Addr().String()
	}
	root := t.TempDir()
	var nodes []*ledgercluster.Node
	for i := range size {
		p := map[uint64]string{}
		for id, a := range peers {
			if id < size || i == size-1 {
				p[id] = a // the first three do not know replica 4 yet
			}
		}
		n, err := ledgercluster.Start(ledgercluster.Config{ClusterID: 3, NodeID: uint64(i + 1), Peers: p, ClientAddrs: clients,
			Listener: raftLns[i], Join: i == size-1, Dir: root + "/" + strconv.Itoa(i+1), Ledger: ledger.Config{MaxAccounts: 16},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		nodes = append(nodes, n)
		srv := &http.Server{Handler: ledgercluster.Handler(n)}
		go srv.Serve(httpLns[i])
		t.Cleanup(func() { srv.Close(); n.Stop() })
	}
	leader := func() int {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			for i, n := range nodes {
				if n.Status().Leading {
					return i
				}
			}
		}
		t.Fatal("no leader")
		return -1
	}
	follower := clients[uint64((leader()+1)%3+1)]
	out, stderr, code := runApp(t, "cluster", "add", "--id", "4", "--raft", peers[4], "--client", clients[4], follower)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "member 4: raft "+peers[4]+", http "+clients[4]+", tcp , voter")
	out, stderr, code = runApp(t, "cluster", "status", clients[1], clients[2], clients[3], clients[4])
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "member 4:")

	_, stderr, code = runApp(t, "cluster", "add", "--id", "5", "--raft", "nowhere", follower)
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "raft address")

	out, stderr, code = runApp(t, "cluster", "remove", "--id", "4", follower)
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, out, "member 4")
	for deadline := time.Now().Add(10 * time.Second); nodes[3].Err() == nil; time.Sleep(10 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "replica 4 still runs after its removal")
	}
	require.ErrorIs(t, nodes[3].Err(), ledgercluster.ErrRemoved)
}
