package ledgercluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/inspect"
)

// The process tests start replicas as real processes: the test binary
// itself, with replicaEnv holding the replica's flags.
const replicaEnv = "LEDGERCLUSTER_REPLICA"

type replicaArgs struct {
	ClusterID, NodeID uint64
	Dir, HTTP         string
	Peers, Clients    map[uint64]string
}

// replicaMain runs one replica until SIGTERM; SIGKILL is the crash.
func replicaMain() int {
	var a replicaArgs
	if err := json.Unmarshal([]byte(os.Getenv(replicaEnv)), &a); err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	n, err := Start(Config{ClusterID: a.ClusterID, NodeID: a.NodeID, Peers: a.Peers, ClientAddrs: a.Clients, Dir: a.Dir,
		Ledger: ledger.Config{MaxAccounts: 1024}, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		return 1
	}
	ln, err := net.Listen("tcp", a.HTTP)
	if err != nil {
		fmt.Fprintln(os.Stderr, "replica:", err)
		n.Stop()
		return 1
	}
	srv := &http.Server{Handler: Handler(n)}
	go srv.Serve(ln)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	if err := n.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "replica stop:", err)
		return 1
	}
	return 0
}

// procCluster is a cluster of replica processes on 127.0.0.1.
type procCluster struct {
	t    *testing.T
	args []replicaArgs
	cmds []*exec.Cmd
	hc   *http.Client
	// created: the first leader created the accounts (createAccounts).
	created bool
}

func freeAddrs(t testing.TB, n int) []string {
	var out []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

func newProcCluster(t *testing.T, size int) *procCluster {
	addrs := freeAddrs(t, 2*size)
	peers, clients := map[uint64]string{}, map[uint64]string{}
	for i := range size {
		peers[uint64(i+1)], clients[uint64(i+1)] = addrs[i], addrs[size+i]
	}
	c := &procCluster{t: t, cmds: make([]*exec.Cmd, size), hc: &http.Client{Timeout: 3 * time.Second}}
	root := t.TempDir()
	for i := range size {
		c.args = append(c.args, replicaArgs{ClusterID: 7, NodeID: uint64(i + 1), Dir: filepath.Join(root, strconv.Itoa(i+1)),
			HTTP: clients[uint64(i+1)], Peers: peers, Clients: clients})
	}
	for i := range size {
		c.start(i)
	}
	t.Cleanup(func() {
		for i := range c.cmds {
			c.kill(i)
		}
		c.hc.CloseIdleConnections()
	})
	return c
}

func (c *procCluster) start(i int) {
	b, _ := json.Marshal(c.args[i])
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), replicaEnv+"="+string(b))
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(c.args[i].Dir), fmt.Sprintf("replica%d.log", i+1)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	logf.Close()
	c.cmds[i] = cmd
}

// kill sends SIGKILL and reaps the process.
func (c *procCluster) kill(i int) {
	if cmd := c.cmds[i]; cmd != nil {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		c.cmds[i] = nil
	}
}

// stop ends the process cleanly (SIGTERM) and fails the test on a bad exit.
func (c *procCluster) stop(i int) {
	cmd := c.cmds[i]
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		c.t.Errorf("replica %d: %v\n%s", i+1, err, c.logTail(i))
	}
	c.cmds[i] = nil
}

func (c *procCluster) logTail(i int) string {
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(c.args[i].Dir), fmt.Sprintf("replica%d.log", i+1)))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (c *procCluster) status(i int) (Status, error) {
	var s Status
	resp, err := c.hc.Get("http://" + c.args[i].HTTP + "/v1/status")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

// leader waits for a replica whose ledger leads and returns its index.
func (c *procCluster) leader(timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for i := range c.args {
			if c.cmds[i] == nil {
				continue
			}
			if s, err := c.status(i); err == nil && s.Leading {
				c.createAccounts(i)
				return i
			}
		}
		time.Sleep(20 * time.Millisecond) // polling another process: no event to wait on
	}
	c.t.Fatalf("no leader within %v", timeout)
	return -1
}

// procAccounts are the accounts the process tests name: 1 .. procAccounts.
const procAccounts = 100

// createAccounts creates, through the first leader's HTTP API, accounts
// 1 .. procAccounts; a later leader finds them replicated.
func (c *procCluster) createAccounts(ld int) {
	if c.created {
		return
	}
	deadline := time.Now().Add(20 * time.Second)
	for a := uint64(1); a <= procAccounts; {
		body, _ := json.Marshal(OpRequest{Kind: "create_account", Account: a, Ledger: 1, Level: "replicated"})
		resp, err := c.hc.Post("http://"+c.args[ld].HTTP+"/v1/ops", "application/json", bytes.NewReader(body))
		var r OpResponse
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("%d %+v", resp.StatusCode, r)
			}
		}
		if err == nil && r.Fail != "ok" && r.Fail != "exists" {
			c.t.Fatalf("creating account %d: %+v", a, r)
		}
		if err == nil {
			a++
			continue
		}
		// Leadership moved (a loaded machine stalls a replica past the
		// election timeout): creations are idempotent, ask the leader.
		if time.Now().After(deadline) {
			c.t.Fatalf("creating account %d: %v", a, err)
		}
		time.Sleep(20 * time.Millisecond) // polling another process: no event to wait on
		for i := range c.args {
			if s, serr := c.status(i); c.cmds[i] != nil && serr == nil && s.Leading {
				ld = i
			}
		}
	}
	c.created = true
}

// converge waits until every replica has applied the same transactions
// with the same hash, and all that any replica sequenced (a leader
// acknowledges at Replicated before its own WAL write, followers learn of
// a commit with the next message, and a submit whose wait was abandoned
// still executes), and returns that status.
func (c *procCluster) converge(timeout time.Duration) Status {
	deadline := time.Now().Add(timeout)
	var last []Status
	for time.Now().Before(deadline) {
		last = last[:0]
		ok := true
		for i := range c.args {
			s, err := c.status(i)
			if err != nil {
				ok = false
				break
			}
			last = append(last, s)
			if s.Applied != last[0].Applied || s.Hash != last[0].Hash {
				ok = false
			}
		}
		for _, s := range last {
			if s.Replicated > last[0].Applied || s.Sequenced > last[0].Applied {
				ok = false
			}
		}
		if ok && len(last) == len(c.args) {
			return last[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("replicas did not converge within %v: %+v", timeout, last)
	return Status{}
}

// client submits deposits at Replicated, following not_leader answers and
// retrying everything else on the next replica with the same user_ref.
type client struct {
	c    *procCluster
	at   int // replica tried next
	acks map[uint64]ledger.TxID
	mu   sync.Mutex
	sent []time.Time // per acknowledgement, when its successful request was sent
	done []time.Time // and when the answer came
}

// firstAckAfter returns when the first acknowledgement of a request sent
// after since came, if one did.
func (cl *client) firstAckAfter(since time.Time) (time.Time, bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	i, _ := slices.BinarySearchFunc(cl.sent, since, time.Time.Compare)
	if i == len(cl.sent) {
		return time.Time{}, false
	}
	return cl.done[i], true
}

func (cl *client) submit(ctx context.Context, ref uint64) error {
	body, _ := json.Marshal(OpRequest{Kind: "deposit", Account: 1 + ref%100, Amount: 1, UserRef: ref, Level: "replicated"})
	for ctx.Err() == nil {
		addr := cl.c.args[cl.at].HTTP
		sent := time.Now()
		resp, err := cl.c.hc.Post("http://"+addr+"/v1/ops", "application/json", bytes.NewReader(body))
		if err != nil {
			cl.next()
			continue
		}
		var r OpResponse
		derr := json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		switch {
		case derr != nil:
			cl.next()
		case resp.StatusCode == http.StatusOK:
			if r.Fail != "ok" && r.Fail != "duplicate" {
				return fmt.Errorf("ref %d: fail %q", ref, r.Fail)
			}
			id := r.ID
			if r.Fail == "duplicate" {
				id = r.DupOf
			}
			cl.acks[ref] = id
			cl.mu.Lock()
			cl.sent, cl.done = append(cl.sent, sent), append(cl.done, time.Now())
			cl.mu.Unlock()
			return nil
		case resp.StatusCode == http.StatusMisdirectedRequest && r.Leader != "":
			cl.follow(r.Leader)
		case resp.StatusCode == http.StatusMisdirectedRequest || resp.StatusCode == http.StatusServiceUnavailable:
			cl.next()
		default:
			return fmt.Errorf("ref %d: %d %+v", ref, resp.StatusCode, r)
		}
	}
	return ctx.Err()
}

func (cl *client) follow(addr string) {
	for i, a := range cl.c.args {
		if a.HTTP == addr {
			if i == cl.at {
				time.Sleep(10 * time.Millisecond) // it names itself: its ledger is still being promoted
			}
			cl.at = i
			return
		}
	}
	cl.next()
}

func (cl *client) next() {
	cl.at = (cl.at + 1) % len(cl.c.args)
	time.Sleep(10 * time.Millisecond) // no replica answered: back off before the next
}

// verifyLedger runs verify on a closed replica's ledger and returns the
// first transaction its WAL retains.
func verifyLedger(dir string) (ledger.TxID, error) {
	rep, err := inspect.Verify(dir)
	if err != nil {
		return 0, err
	}
	if len(rep.Findings) > 0 {
		return 0, fmt.Errorf("findings: %v", rep.Findings)
	}
	return rep.FirstTx, nil
}

// readDump reads a closed replica's ledger from transaction from on as
// inspect.Dump lines.
func readDump(t *testing.T, dir string, from ledger.TxID) ([]byte, map[uint64][]string) {
	t.Helper()
	var out bytes.Buffer
	if err := inspect.Dump(filepath.Join(dir, "ledger"), from, 0, &out); err != nil {
		t.Fatal(err)
	}
	refs := map[uint64][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var tx struct {
			ID      uint64 `json:"id"`
			Fail    string `json:"fail"`
			UserRef uint64 `json:"user_ref"`
		}
		if err := json.Unmarshal(sc.Bytes(), &tx); err != nil {
			t.Fatal(err)
		}
		if tx.UserRef != 0 && tx.Fail != "duplicate" {
			refs[tx.UserRef] = append(refs[tx.UserRef], tx.Fail+"@"+strconv.FormatUint(tx.ID, 10))
		}
	}
	return out.Bytes(), refs
}

// runLoad starts clients submitting until ctx ends; each sends its error
// (nil once ctx ended) to the channel.
func runLoad(ctx context.Context, c *procCluster, clients int) ([]*client, chan error) {
	cls := make([]*client, clients)
	errc := make(chan error, clients)
	for k := range cls {
		cl := &client{c: c, at: k % len(c.args), acks: map[uint64]ledger.TxID{}}
		cls[k] = cl
		go func() {
			for seq := uint64(1); ; seq++ {
				if err := cl.submit(ctx, uint64(k+1)<<32|seq); err != nil {
					if ctx.Err() != nil {
						err = nil
					}
					errc <- err
					return
				}
			}
		}()
	}
	return cls, errc
}

func checkReplicas(t *testing.T, c *procCluster, cls []*client) {
	t.Helper()
	st := c.converge(20 * time.Second)
	for i := range c.args {
		c.stop(i)
	}
	acks := map[uint64]ledger.TxID{}
	for _, cl := range cls {
		maps.Copy(acks, cl.acks)
	}
	var dirs []string
	for _, a := range c.args {
		dirs = append(dirs, a.Dir)
	}
	checkDirs(t, dirs, acks)
	t.Logf("%d acknowledged, %d transactions on each replica, hash %s", len(acks), st.Applied, st.Hash)
}

// checkDirs checks the closed replica directories: verify clean,
// identical ledgers (their dumps byte for byte from the first transaction
// every WAL retains), every acknowledged ref from there on executed
// exactly once under the id it was acknowledged with, every ref executed
// at most once.
func checkDirs(t *testing.T, dirs []string, acks map[uint64]ledger.TxID) {
	t.Helper()
	if len(acks) == 0 {
		t.Error("nothing acknowledged")
	}
	from := ledger.TxID(1)
	for i, dir := range dirs {
		first, err := verifyLedger(filepath.Join(dir, "ledger"))
		if err != nil {
			t.Errorf("replica %d: verify: %v", i+1, err)
		}
		from = max(from, first)
	}
	t.Logf("ledgers compared from tx %d", from)
	var first []byte
	for i, dir := range dirs {
		dump, refs := readDump(t, dir, from)
		if i == 0 {
			first = dump
		} else if !bytes.Equal(dump, first) {
			a, b := bytes.Split(first, []byte("\n")), bytes.Split(dump, []byte("\n"))
			k := 0
			for k < min(len(a), len(b)) && bytes.Equal(a[k], b[k]) {
				k++
			}
			at := func(l [][]byte) string {
				if k < len(l) {
					return string(l[k])
				}
				return "(end)"
			}
			t.Errorf("replica %d's ledger differs from replica 1's at line %d of %d/%d:\n%s\n%s", i+1, k+1, len(a), len(b), at(a), at(b))
		}
		for ref, id := range acks {
			if id < from {
				continue // retention removed it from some WAL
			}
			got := refs[ref]
			if len(got) != 1 || got[0] != "ok@"+strconv.FormatUint(uint64(id), 10) {
				t.Errorf("replica %d: acknowledged ref %x (tx %d) is %v in the WAL", i+1, ref, id, got)
			}
		}
		for ref, got := range refs {
			if len(got) != 1 {
				t.Errorf("replica %d: ref %x executed %v", i+1, ref, got)
			}
		}
	}
}

// TestMetricsShowHash: /metrics carries the WAL hash of /v1/status.
func TestMetricsShowHash(t *testing.T) {
	c := startInproc(t, 3, false)
	n := c.nodes[c.leader(10*time.Second)]
	res, err := n.SubmitAndWait(context.Background(), ledger.Deposit{Account: 1, Amount: 1}, ledger.Replicated)
	if err != nil {
		t.Fatal(err)
	}
	// Replicated is a quorum's raft logs; the leader's own WAL (and so the
	// hash) may still be one fsync behind. Wait for it so the hash is settled.
	if err := n.Ledger().Wait(context.Background(), res.ID, ledger.Committed); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(n))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	st := n.Status()
	for _, want := range []string{
		"ledgercluster_wal_hash_hi " + strconv.FormatFloat(float64(st.hash>>32), 'g', -1, 64) + "\n",
		"ledgercluster_wal_hash_lo " + strconv.FormatFloat(float64(st.hash&(1<<32-1)), 'g', -1, 64) + "\n",
		"ledgercluster_leading 1\n",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q:\n%s", want, b)
		}
	}
}
