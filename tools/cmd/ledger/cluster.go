package main

import (
	"context"
	"crypto/tls"
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
	"github.com/lanework/lanework/ledger/server"
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
		&cli.StringFlag{Name: "tcp-peers", EnvVars: []string{"LEDGER_TCP_PEERS"},
			Usage: "every replica's --addr (msgpack protocol), same form: a not_leader answer there names the leader's"},
		&cli.StringFlag{Name: "peer-token", EnvVars: []string{"LEDGER_PEER_TOKEN"},
			Usage: "secret every replica's raft connections carry and require (the same on all; prefer the env var)"},
		&cli.StringFlag{Name: "tls-peer-ca", EnvVars: []string{"LEDGER_TLS_PEER_CA"},
			Usage: "PEM CA(s) the peers' --tls-cert chain to; raft then runs over mutual TLS with --tls-cert (default: --tls-client-ca)"},
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
	var clients, tcps map[uint64]string
	if s := c.String("client-peers"); s != "" {
		if clients, err = ledgercluster.ParsePeers(s); err != nil {
			return exitcode.Usage("serve: --client-peers: %v", err)
		}
	}
	if s := c.String("tcp-peers"); s != "" {
		if tcps, err = ledgercluster.ParsePeers(s); err != nil {
			return exitcode.Usage("serve: --tcp-peers: %v", err)
		}
	}
	if peers[c.Uint64("node-id")] == "" {
		return exitcode.Usage("serve: --peers names no address for node %d (--node-id)", c.Uint64("node-id"))
	}
	httpAddr := c.String("http-addr")
	// Tokens and TLS as the single-node server reads them; raft dials its
	// peers with the same certificate, verifying them with --tls-peer-ca.
	var sec server.Config
	if err := serveSecurity(c, &sec); err != nil {
		return exitcode.Usage("serve: %v", err)
	}
	var peerTLS *tls.Config
	if sec.TLS != nil {
		caFile := c.String("tls-peer-ca")
		if caFile == "" {
			caFile = c.String("tls-client-ca")
		}
		if caFile == "" {
			return exitcode.Usage("serve: a cluster replica with --tls-cert needs --tls-peer-ca (or --tls-client-ca) to verify its peers")
		}
		pool, err := server.LoadCertPool(caFile)
		if err != nil {
			return exitcode.Usage("serve: %v", err)
		}
		peerTLS = &tls.Config{Certificates: sec.TLS.Certificates, RootCAs: pool}
		raftTLS := sec.TLS.Clone() // peers present their certificate: mutual TLS on raft
		raftTLS.ClientCAs, raftTLS.ClientAuth = pool, tls.RequireAndVerifyClientCert
		sec.TLS = raftTLS
	}
	secure := len(sec.Tokens) > 0 && sec.TLS != nil && c.String("peer-token") != ""
	if (!isLoopback(httpAddr) || !isLoopback(peers[c.Uint64("node-id")])) && !secure && !c.Bool("insecure") {
		return exitcode.Usage("serve: %s or %s is not loopback: add --token-file (or LEDGER_TOKEN), --peer-token (LEDGER_PEER_TOKEN) "+
			"and --tls-cert with --tls-key and --tls-peer-ca, or bind to 127.0.0.1; --insecure listens anyway", httpAddr, peers[c.Uint64("node-id")])
	}
	logger, err := serveLogger(c)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := ledgercluster.Start(ledgercluster.Config{ClusterID: c.Uint64("cluster-id"), NodeID: c.Uint64("node-id"),
		Peers: peers, ClientAddrs: clients, TCPAddrs: tcps, Join: c.Bool("join"), Dir: c.String("dir"), Logger: logger,
		Tokens: sec.Tokens, PeerToken: c.String("peer-token"), TLS: sec.TLS, PeerTLS: peerTLS,
		Ledger: ledger.Config{MaxAccounts: c.Uint64("max-accounts"), WaitStrategy: ws, SnapshotEvery: c.Int64("snapshot-every"),
			DedupRetention: c.Duration("dedup-retention"), DedupRetentionTxs: c.Uint64("dedup-retention-txs"), Index: c.Bool("index")}})
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
	scheme := "http"
	var htls *tls.Config
	if sec.TLS != nil {
		if htls, err = htlsOf(c, sec.TLS); err != nil {
			ln.Close()
			n.Stop()
			return err
		}
		ln, scheme = tls.NewListener(ln, htls), "https"
	}
	go srv.Serve(ln)
	// The ledger server's msgpack protocol on --addr, on whichever ledger
	// the replica has (server.NewReplica).
	tcpCfg := server.Config{Addr: c.String("addr"), HTTPAddr: "off", Logger: logger, Insecure: c.Bool("insecure"), Tokens: sec.Tokens,
		MaxConns: c.Int("max-conns"), MaxInFlight: c.Int("max-inflight"), MaxFrame: c.Int("max-frame"), MaxBatch: c.Int("max-batch"),
		IdleTimeout: c.Duration("idle-timeout"), ReadTimeout: c.Duration("read-timeout"), WriteTimeout: c.Duration("write-timeout")}
	tcpCfg.TLS = htls
	ts, err := server.NewReplica(n, tcpCfg)
	if err == nil {
		err = ts.Start()
	}
	if err != nil {
		srv.Close()
		n.Stop()
		if errors.Is(err, server.ErrExposed) || errors.Is(err, server.ErrConfig) {
			return exitcode.Usage("serve: --addr: %v", err)
		}
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintf(c.App.Writer, "ledger: replica %d of cluster %d serving %s on http %s://%s, tcp %s, raft %s\n",
		c.Uint64("node-id"), c.Uint64("cluster-id"), c.String("dir"), scheme, ln.Addr(), ts.Addr(), peers[c.Uint64("node-id")])
	<-ctx.Done()
	stop()
	fmt.Fprintln(c.App.Writer, "ledger: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), c.Duration("shutdown-timeout"))
	defer cancel()
	serr := errors.Join(srv.Shutdown(sctx), ts.Shutdown(sctx))
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

// htlsOf is the client listeners' TLS: the replica's certificate; client
// certificates only if --tls-client-ca asks (already loaded, as raft's).
func htlsOf(c *cli.Context, raftTLS *tls.Config) (*tls.Config, error) {
	h := raftTLS.Clone()
	h.ClientCAs, h.ClientAuth = nil, tls.NoClientCert
	if ca := c.String("tls-client-ca"); ca != "" {
		pool, err := server.LoadCertPool(ca)
		if err != nil {
			return nil, exitcode.Usage("serve: %v", err)
		}
		h.ClientCAs, h.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return h, nil
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
					"replica N in --dir/N with raft on --base-port+N, HTTP on --base-port+100+N and the msgpack\n" +
					"protocol on --base-port+200+N, and\n" +
					"prints how to use it. Kill one (kill -9) to watch the others elect a new leader.",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "dir", Value: "./cluster-data", Usage: "parent of the replicas' directories"},
					&cli.IntFlag{Name: "base-port", Value: 7100, Usage: "raft ports are base+1..3, HTTP base+101..103, msgpack base+201..203"},
				},
				Action: clusterDemo,
			},
			{
				Name:      "status",
				Usage:     "print each replica's status (role, leader, applied tx, hash) and the members",
				ArgsUsage: "http-addr...",
				Flags:     clusterClientFlags(),
				Action:    clusterStatus,
			},
			{
				Name:  "add",
				Usage: "add a replica to the cluster (a raft configuration change on the leader)",
				Description: "Start the new replica with `ledger serve --join --node-id N --peers <all, itself included>`,\n" +
					"then add it; it catches up from the leader's log or snapshot.",
				ArgsUsage: "http-addr...",
				Flags: append(clusterClientFlags(),
					&cli.Uint64Flag{Name: "id", Required: true, Usage: "the new replica's node id (never used before)"},
					&cli.StringFlag{Name: "raft", Required: true, Usage: "its raft address, host:port"},
					&cli.StringFlag{Name: "client", Usage: "its --http-addr, which not_leader answers name"},
					&cli.StringFlag{Name: "tcp", Usage: "its --addr (msgpack), which not_leader answers there name"},
				),
				Action: func(c *cli.Context) error {
					body, _ := json.Marshal(ledgercluster.Member{ID: c.Uint64("id"), Raft: c.String("raft"), Client: c.String("client"), TCP: c.String("tcp")})
					return clusterChange(c, http.MethodPost, "/v1/members", body)
				},
			},
			{
				Name:      "remove",
				Usage:     "remove a replica from the cluster (a raft configuration change on the leader); it stops",
				ArgsUsage: "http-addr...",
				Flags:     append(clusterClientFlags(), &cli.Uint64Flag{Name: "id", Required: true, Usage: "the replica's node id"}),
				Action: func(c *cli.Context) error {
					return clusterChange(c, http.MethodDelete, "/v1/members/"+strconv.FormatUint(c.Uint64("id"), 10), nil)
				},
			},
		},
	}
}

// clusterClientFlags are how the cluster commands reach the replicas'
// client API.
func clusterClientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "token", EnvVars: []string{"LEDGER_TOKEN"}, Usage: "bearer token (prefer LEDGER_TOKEN: flags show in ps)"},
		&cli.StringFlag{Name: "tls-ca", EnvVars: []string{"LEDGER_TLS_CA"}, Usage: "PEM CA the replicas' certificates chain to: speak HTTPS"},
	}
}

// clusterClient is an HTTP client of the replicas as the flags say, and
// the URL scheme.
func clusterClient(c *cli.Context, timeout time.Duration) (*http.Client, string, error) {
	hc := &http.Client{Timeout: timeout}
	if ca := c.String("tls-ca"); ca != "" {
		pool, err := server.LoadCertPool(ca)
		if err != nil {
			return nil, "", exitcode.Usage("cluster %s: %v", c.Command.Name, err)
		}
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
		return hc, "https://", nil
	}
	return hc, "http://", nil
}

func clusterGet(c *cli.Context, hc *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(c.Context, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if t := c.String("token"); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	return hc.Do(req)
}

// clusterChange sends a membership change to the replicas named, following
// a not_leader answer to the leader, and prints the members once applied.
func clusterChange(c *cli.Context, method, path string, body []byte) error {
	name := c.Command.Name
	if c.NArg() == 0 {
		return exitcode.Usage("cluster %s: name at least one replica's http address", name)
	}
	hc, scheme, err := clusterClient(c, 30*time.Second)
	if err != nil {
		return err
	}
	addrs := c.Args().Slice()
	var last error
	for i := 0; i < len(addrs); i++ {
		req, err := http.NewRequestWithContext(c.Context, method, scheme+addrs[i]+path, strings.NewReader(string(body)))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if t := c.String("token"); t != "" {
			req.Header.Set("Authorization", "Bearer "+t)
		}
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
		case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
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
		fmt.Fprintf(c.App.Writer, "member %d: raft %s, http %s, tcp %s, %s\n", m.ID, m.Raft, m.Client, m.TCP, role)
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
	var peers, clients, tcps []string
	for i := 1; i <= 3; i++ {
		peers = append(peers, fmt.Sprintf("%d=127.0.0.1:%d", i, base+i))
		clients = append(clients, fmt.Sprintf("%d=127.0.0.1:%d", i, base+100+i))
		tcps = append(tcps, fmt.Sprintf("%d=127.0.0.1:%d", i, base+200+i))
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
			"--peers", strings.Join(peers, ","), "--client-peers", strings.Join(clients, ","), "--tcp-peers", strings.Join(tcps, ","),
			"--http-addr", fmt.Sprintf("127.0.0.1:%d", base+100+i), "--addr", fmt.Sprintf("127.0.0.1:%d", base+200+i))
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
  ledger deposit --addr 127.0.0.1:%[4]d,127.0.0.1:%[5]d,127.0.0.1:%[6]d --ref 43 1 5
      (msgpack: the client follows the leader)
Ctrl-C stops all three.
`, base+101, base+102, base+103, base+201, base+202, base+203)
	<-ctx.Done()
	fmt.Fprintln(c.App.Writer, "cluster demo: stopping")
	return nil
}

func clusterStatus(c *cli.Context) error {
	if c.NArg() == 0 {
		return exitcode.Usage("cluster status: name at least one replica's http address")
	}
	hc, scheme, err := clusterClient(c, 2*time.Second)
	if err != nil {
		return err
	}
	var failed error
	for _, a := range c.Args().Slice() {
		resp, err := clusterGet(c, hc, scheme+a+"/v1/status")
		if err != nil {
			fmt.Fprintf(c.App.Writer, "%s: unreachable: %v\n", a, err)
			failed = errors.New("cluster status: a replica did not answer")
			continue
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			fmt.Fprintf(c.App.Writer, "%s: %s\n", a, resp.Status)
			failed = fmt.Errorf("cluster status: %s answered %s", a, resp.Status)
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
		resp, err := clusterGet(c, hc, scheme+a+"/v1/members")
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
