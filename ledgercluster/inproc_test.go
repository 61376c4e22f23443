package ledgercluster

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
)

// inproc is a cluster of Nodes in the test process: real raft, real TCP on
// 127.0.0.1 (optionally through cuttable proxies), real disks.
type inproc struct {
	tb    testing.TB
	nodes []*Node
	cfgs  []Config
	dirs  []string
	links map[[2]int]*link // from, to: the proxy node from dials to reach to
	// created: the first leader created the accounts (createAccounts).
	created bool
}

// inprocAccounts is the nodes' MaxAccounts; accounts 1 .. inprocAccounts-1 exist.
const inprocAccounts = 1024

// startInproc starts size nodes; clients, if given, are their client
// addresses (Config.ClientAddrs).
func startInproc(tb testing.TB, size int, proxied bool, clients ...string) *inproc {
	return startInprocWith(tb, size, proxied, ledger.Config{MaxAccounts: inprocAccounts}, clients...)
}

// startInprocWith starts size nodes whose ledgers take lc (MaxAccounts
// must be inprocAccounts).
func startInprocWith(tb testing.TB, size int, proxied bool, lc ledger.Config, clients ...string) *inproc {
	return startInprocEdit(tb, size, proxied, lc, nil, clients...)
}

// startInprocEdit is startInprocWith whose edit, if not nil, changes each
// node's Config before the node starts.
func startInprocEdit(tb testing.TB, size int, proxied bool, lc ledger.Config, edit func(*Config), clients ...string) *inproc {
	c := &inproc{tb: tb, links: map[[2]int]*link{}}
	var lns []net.Listener
	var addrs []string
	for range size {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		lns, addrs = append(lns, ln), append(addrs, ln.Addr().String())
	}
	root := tb.TempDir()
	for i := range size {
		peers := map[uint64]string{}
		for j := range size {
			peers[uint64(j+1)] = addrs[j]
			if proxied && i != j {
				l := newLink(tb, addrs[j])
				c.links[[2]int{i, j}] = l
				peers[uint64(j+1)] = l.addr()
			}
		}
		dir := filepath.Join(root, strconv.Itoa(i+1))
		c.dirs = append(c.dirs, dir)
		cfg := Config{ClusterID: 9, NodeID: uint64(i + 1), Peers: peers, Dir: dir, Listener: lns[i],
			Ledger: lc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if len(clients) == size {
			cfg.ClientAddrs = map[uint64]string{}
			for j, a := range clients {
				cfg.ClientAddrs[uint64(j+1)] = a
			}
		}
		if edit != nil {
			edit(&cfg)
		}
		c.cfgs = append(c.cfgs, cfg)
		n, err := Start(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
	}
	tb.Cleanup(func() {
		c.stop()
		for _, l := range c.links {
			l.close()
		}
	})
	return c
}

// restart starts stopped node i again on its directory and address.
func (c *inproc) restart(i int) {
	cfg := c.cfgs[i]
	ln, err := net.Listen("tcp", cfg.Peers[cfg.NodeID])
	if err != nil {
		c.tb.Fatal(err)
	}
	cfg.Listener = ln
	if c.nodes[i], err = Start(cfg); err != nil {
		c.tb.Fatal(err)
	}
}

// join starts a new node that joins the running cluster as replica id
// (not yet added: the test adds it) and returns its index.
func (c *inproc) join(id uint64) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.tb.Fatal(err)
	}
	cfg := c.cfgs[0]
	cfg.NodeID, cfg.Listener, cfg.Join = id, ln, true
	cfg.Peers = maps.Clone(cfg.Peers)
	cfg.Peers[id] = ln.Addr().String()
	cfg.Dir = filepath.Join(filepath.Dir(c.dirs[0]), strconv.FormatUint(id, 10))
	n, err := Start(cfg)
	if err != nil {
		c.tb.Fatal(err)
	}
	c.nodes, c.cfgs, c.dirs = append(c.nodes, n), append(c.cfgs, cfg), append(c.dirs, cfg.Dir)
	return len(c.nodes) - 1
}

func (c *inproc) stopNode(i int) {
	if err := c.nodes[i].Stop(); err != nil {
		c.tb.Errorf("node %d: %v", i+1, err)
	}
	c.nodes[i] = nil
}

// converge waits until every node has applied all that any sequenced,
// with equal hashes.
func (c *inproc) converge(timeout time.Duration) Status {
	deadline := time.Now().Add(timeout)
	for {
		var st []Status
		ok := true
		for _, n := range c.nodes {
			if n == nil {
				continue // stopped or removed
			}
			s := n.Status()
			st = append(st, s)
			if s.Applied != st[0].Applied || s.Hash != st[0].Hash {
				ok = false
			}
		}
		for _, s := range st {
			if s.Sequenced > st[0].Applied {
				ok = false
			}
		}
		if ok {
			return st[0]
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("nodes did not converge within %v: %+v", timeout, st)
		}
		time.Sleep(10 * time.Millisecond) // progress of other goroutines, no event to wait on
	}
}

func (c *inproc) stop() {
	for i, n := range c.nodes {
		if n != nil {
			c.stopNode(i)
		}
	}
}

// leader waits for a node whose ledger leads, among those in among (all
// if nil).
func (c *inproc) leader(timeout time.Duration, among ...int) int {
	if among == nil {
		for i := range c.nodes {
			among = append(among, i)
		}
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, i := range among {
			if n := c.nodes[i]; n != nil && n.Status().Leading { // nil: stopped
				c.createAccounts(i)
				return i
			}
		}
		time.Sleep(5 * time.Millisecond) // leadership has no event to wait on from outside
	}
	c.tb.Fatalf("no leader among %v within %v", among, timeout)
	return -1
}

// createAccounts creates, through the first leader, the accounts the
// tests name (1 .. MaxAccounts-1); a later leader finds them replicated.
func (c *inproc) createAccounts(ld int) {
	if c.created {
		return
	}
	ops := make([]ledger.Op, 0, inprocAccounts-1)
	for a := uint64(1); a < inprocAccounts; a++ {
		ops = append(ops, ledger.CreateAccount{ID: a, Ledger: 1})
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		l := c.nodes[ld].Ledger()
		_, last, err := l.SubmitBatch(ops)
		if err == nil {
			err = l.Wait(context.Background(), last, ledger.Replicated)
		}
		if err == nil {
			break
		}
		// Leadership moved (a loaded machine stalls a Ready loop past the
		// election timeout): the creations are idempotent, ask the next
		// leader.
		if time.Now().After(deadline) {
			c.tb.Fatalf("creating the accounts: %v", err)
		}
		time.Sleep(10 * time.Millisecond) // leadership has no event to wait on from outside
		for i, n := range c.nodes {
			if n != nil && n.Status().Leading {
				ld = i
			}
		}
	}
	c.created = true
}

// setNetwork makes every link drop raft messages with probability drop
// and delay everything by up to delay.
func (c *inproc) setNetwork(drop float64, delay time.Duration) {
	for _, l := range c.links {
		l.set(drop, delay)
	}
}

// isolate cuts (or heals) every link to and from node i.
func (c *inproc) isolate(i int, cut bool) {
	for k, l := range c.links {
		if k[0] == i || k[1] == i {
			l.setCut(cut)
		}
	}
}
