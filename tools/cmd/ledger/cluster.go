package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledgercluster"
	"github.com/lanework/lanework/pressure"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

// clusterFlags are serve's flags for a replica of a cluster.
func clusterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.Uint64Flag{Name: "cluster-id", EnvVars: []string{"LEDGER_CLUSTER_ID"},
			Usage: "serve one replica of this cluster (non-zero) instead of a single ledger"},
		&cli.Uint64Flag{Name: "node-id", EnvVars: []string{"LEDGER_NODE_ID"}, Usage: "this replica's id, a key of --peers"},
		&cli.StringFlag{Name: "peers", EnvVars: []string{"LEDGER_PEERS"},
			Usage: "every replica's raft address: 1=127.0.0.1:7101,2=127.0.0.1:7102,..."},
		&cli.StringFlag{Name: "client-peers", EnvVars: []string{"LEDGER_CLIENT_PEERS"},
			Usage: "every replica's --http-addr, same form: a follower's not_leader answer names the leader's"},
		&cli.BoolFlag{Name: "join", EnvVars: []string{"LEDGER_JOIN"},
			Usage: "a new replica of a running cluster: wait to be added (ledger cluster add) and catch up from the leader"},
	}
}

// serveCluster is serve with --cluster-id: one replica, its client API
// (ledgercluster.Handler) on --http-addr.
func serveCluster(c *cli.Context, ws pressure.WaitStrategy) error {
	peers, err := ledgercluster.ParsePeers(c.String("peers"))
	if err != nil {
		return exitcode.Usage("serve: --peers: %v", err)
	}
	var clients map[uint64]string
	if s := c.String("client-peers"); s != "" {
		if clients, err = ledgercluster.ParsePeers(s); err != nil {
			return exitcode.Usage("serve: --client-peers: %v", err)
		}
	}
	if peers[c.Uint64("node-id")] == "" {
		return exitcode.Usage("serve: --peers names no address for node %d (--node-id)", c.Uint64("node-id"))
	}
	httpAddr := c.String("http-addr")
	if !isLoopback(httpAddr) || !isLoopback(peers[c.Uint64("node-id")]) {
		if !c.Bool("insecure") {
			return exitcode.Usage("serve: a cluster replica has no tokens or TLS yet: bind --http-addr and its --peers address to loopback, or pass --insecure")
		}
	}
	logger, err := serveLogger(c)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := ledgercluster.Start(ledgercluster.Config{ClusterID: c.Uint64("cluster-id"), NodeID: c.Uint64("node-id"),
		Peers: peers, ClientAddrs: clients, Join: c.Bool("join"), Dir: c.String("dir"), Logger: logger,
		Ledger: ledger.Config{MaxAccounts: c.Uint64("max-accounts"), WaitStrategy: ws, SnapshotEvery: c.Int64("snapshot-every"),
			DedupRetention: c.Duration("dedup-retention"), DedupRetentionTxs: c.Uint64("dedup-retention-txs")}})
	if errors.Is(err, ledgercluster.ErrConfig) || errors.Is(err, ledger.ErrConfig) {
		return exitcode.Usage("serve: %v", err)
	}
	if err != nil {
		return fmt.Errorf("start replica in %s: %w", c.String("dir"), err)
	}
	ln, err := net.Listen("tcp", httpAddr)
	if err != nil {
		n.Stop()
		return fmt.Errorf("serve: %w", err)
	}
	srv := &http.Server{Handler: ledgercluster.Handler(n), ReadHeaderTimeout: c.Duration("read-timeout")}
	go srv.Serve(ln)
	fmt.Fprintf(c.App.Writer, "ledger: replica %d of cluster %d serving %s on http http://%s, raft %s\n",
		c.Uint64("node-id"), c.Uint64("cluster-id"), c.String("dir"), ln.Addr(), peers[c.Uint64("node-id")])
	<-ctx.Done()
	stop()
	fmt.Fprintln(c.App.Writer, "ledger: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), c.Duration("shutdown-timeout"))
	defer cancel()
	serr := srv.Shutdown(sctx)
	nerr := n.Stop()
	if serr != nil {
		return fmt.Errorf("shutdown: %w", serr)
	}
	if nerr != nil {
		return fmt.Errorf("stop replica: %w", nerr)
	}
	fmt.Fprintln(c.App.Writer, "ledger: stopped cleanly")
	return nil
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func clusterCommand() *cli.Command {
	return &cli.Command{
		Name:  "cluster",
		Usage: "run and inspect a replicated ledger (raft)",
		Subcommands: []*cli.Command{
			{
				Name:  "demo",
				Usage: "start a local 3-replica cluster on loopback until SIGINT",
				Description: "Starts `ledger serve --cluster-id 1 --node-id N ...` three times as child processes,\n" +
					"replica N in --dir/N with raft on --base-port+N and HTTP on --base-port+100+N, and\n" +
					"prints how to use it. Kill one (kill -9) to watch the others elect a new leader.",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "dir", Value: "./cluster-data", Usage: "parent of the replicas' directories"},
					&cli.IntFlag{Name: "base-port", Value: 7100, Usage: "raft ports are base+1..3, HTTP base+101..103"},
				},
				Action: clusterDemo,
			},
			{
				Name:      "status",
				Usage:     "print each replica's status (role, leader, applied tx, hash) and the members",
				ArgsUsage: "http-addr...",
				Action:    clusterStatus,
			},
			{
				Name:  "add",
				Usage: "add a replica to the cluster (a raft configuration change on the leader)",
				Description: "Start the new replica with `ledger serve --join --node-id N --peers <all, itself included>`,\n" +
					"then add it; it catches up from the leader's log or snapshot.",
				ArgsUsage: "http-addr...",
				Flags: []cli.Flag{
					&cli.Uint64Flag{Name: "id", Required: true, Usage: "the new replica's node id (never used before)"},
					&cli.StringFlag{Name: "raft", Required: true, Usage: "its raft address, host:port"},
					&cli.StringFlag{Name: "client", Usage: "its --http-addr, which not_leader answers name"},
				},
				Action: func(c *cli.Context) error {
					body, _ := json.Marshal(ledgercluster.Member{ID: c.Uint64("id"), Raft: c.String("raft"), Client: c.String("client")})
					return clusterChange(c, http.MethodPost, "/v1/members", body)
				},
			},
			{
				Name:      "remove",
				Usage:     "remove a replica from the cluster (a raft configuration change on the leader); it stops",
				ArgsUsage: "http-addr...",
				Flags:     []cli.Flag{&cli.Uint64Flag{Name: "id", Required: true, Usage: "the replica's node id"}},
				Action: func(c *cli.Context) error {
					return clusterChange(c, http.MethodDelete, "/v1/members/"+strconv.FormatUint(c.Uint64("id"), 10), nil)
				},
			},
		},
	}
}

// clusterChange sends a membership change to the replicas named, following
// a not_leader answer to the leader, and prints the members once applied.
func clusterChange(c *cli.Context, method, path string, body []byte) error {
	name := c.Command.Name
	if c.NArg() == 0 {
		return exitcode.Usage("cluster %s: name at least one replica's http address", name)
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	addrs := c.Args().Slice()
	var last error
	for i := 0; i < len(addrs); i++ {
		req, err := http.NewRequestWithContext(c.Context, method, "http://"+addrs[i]+path, strings.NewReader(string(body)))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			last = err
			continue
		}
		var ok []ledgercluster.Member
		var bad ledgercluster.OpResponse
		if resp.StatusCode == http.StatusOK {
			err = json.NewDecoder(resp.Body).Decode(&ok)
		} else {
			err = json.NewDecoder(resp.Body).Decode(&bad)
		}
		resp.Body.Close()
		switch {
		case err != nil:
			last = fmt.Errorf("%s: %w", addrs[i], err)
		case resp.StatusCode == http.StatusOK:
			printMembers(c, ok)
			return nil
		case resp.StatusCode == http.StatusBadRequest:
			return exitcode.Usage("cluster %s: %s", name, bad.Error)
		case resp.StatusCode == http.StatusMisdirectedRequest && bad.Leader != "":
			addrs = append(addrs, bad.Leader) // ask the leader next
			last = fmt.Errorf("%s: not the leader", addrs[i])
		default:
			last = fmt.Errorf("%s: %d %s", addrs[i], resp.StatusCode, bad.Error)
		}
		if len(addrs) > 16 {
			break
		}
	}
	return fmt.Errorf("cluster %s: no leader took it: %w", name, last)
}

func printMembers(c *cli.Context, ms []ledgercluster.Member) {
	for _, m := range ms {
		role := "voter"
		if !m.Voter {
			role = "not in the configuration"
		}
		fmt.Fprintf(c.App.Writer, "member %d: raft %s, http %s, %s\n", m.ID, m.Raft, m.Client, role)
	}
}

func clusterDemo(c *cli.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	base := c.Int("base-port")
	if base < 1 || base > 65000 {
		return exitcode.Usage("cluster demo: --base-port %d: want 1..65000", base)
	}
	var peers, clients []string
	for i := 1; i <= 3; i++ {
		peers = append(peers, fmt.Sprintf("%d=127.0.0.1:%d", i, base+i))
		clients = append(clients, fmt.Sprintf("%d=127.0.0.1:%d", i, base+100+i))
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var cmds []*exec.Cmd
	defer func() {
		for _, cmd := range cmds {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		}
	}()
	for i := 1; i <= 3; i++ {
		dir := filepath.Join(c.String("dir"), strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		logf, err := os.OpenFile(filepath.Join(c.String("dir"), fmt.Sprintf("replica%d.log", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		cmd := exec.Command(self, "serve", "--cluster-id", "1", "--node-id", strconv.Itoa(i), "--dir", dir,
			"--peers", strings.Join(peers, ","), "--client-peers", strings.Join(clients, ","),
			"--http-addr", fmt.Sprintf("127.0.0.1:%d", base+100+i))
		cmd.Stdout, cmd.Stderr = logf, logf
		err = cmd.Start()
		logf.Close()
		if err != nil {
			return err
		}
		cmds = append(cmds, cmd)
		fmt.Fprintf(c.App.Writer, "replica %d: pid %d, http 127.0.0.1:%d, log %s\n", i, cmd.Process.Pid, base+100+i, logf.Name())
	}
	fmt.Fprintf(c.App.Writer, `
try:
  curl -s -XPOST 127.0.0.1:%[1]d/v1/ops -d '{"kind":"deposit","account":1,"amount":5,"user_ref":42}'
      (a follower answers 421 {"error":"not_leader","leader":...}: ask that one)
  curl -s 127.0.0.1:%[1]d/v1/balance/1
  ledger cluster status 127.0.0.1:%[1]d 127.0.0.1:%[2]d 127.0.0.1:%[3]d
Ctrl-C stops all three.
`, base+101, base+102, base+103)
	<-ctx.Done()
	fmt.Fprintln(c.App.Writer, "cluster demo: stopping")
	return nil
}

func clusterStatus(c *cli.Context) error {
	if c.NArg() == 0 {
		return exitcode.Usage("cluster status: name at least one replica's http address")
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	var failed error
	for _, a := range c.Args().Slice() {
		resp, err := hc.Get("http://" + a + "/v1/status")
		if err != nil {
			fmt.Fprintf(c.App.Writer, "%s: unreachable: %v\n", a, err)
			failed = errors.New("cluster status: a replica did not answer")
			continue
		}
		var s ledgercluster.Status
		err = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
		role := "follower"
		if s.Leading {
			role = "leader"
		}
		fmt.Fprintf(c.App.Writer, "%s: node %d %s (raft leader %d), applied tx %d, replicated %d, hash %s\n",
			a, s.NodeID, role, s.Leader, s.Applied, s.Replicated, s.Hash)
	}
	for _, a := range c.Args().Slice() {
		resp, err := hc.Get("http://" + a + "/v1/members")
		if err != nil {
			continue
		}
		var ms []ledgercluster.Member
		err = json.NewDecoder(resp.Body).Decode(&ms)
		resp.Body.Close()
		if err == nil {
			fmt.Fprintf(c.App.Writer, "members as %s knows them:\n", a)
			printMembers(c, ms)
			break
		}
	}
	return failed
}
