package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server"
	"github.com/lanework/lanework/pressure"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve a ledger over TCP (binary protocol) and HTTP/JSON until SIGINT or SIGTERM",
		Description: "Opens (or creates) the ledger in --dir, listens on --addr and --http-addr (loopback by default)\n" +
			"and prints where. On SIGINT or SIGTERM it stops accepting, answers the requests in flight,\n" +
			"closes the ledger cleanly and exits 0.\n\n" +
			"With --token-file (or LEDGER_TOKEN) every request needs a bearer token; with --tls-cert and\n" +
			"--tls-key both listeners speak TLS (--tls-client-ca: mutual TLS). A listener beyond loopback\n" +
			"without both is refused (exit 2) unless --insecure.\n\n" +
			"With --cluster-id, --node-id and --peers it serves one replica of a raft cluster instead\n" +
			"(docs/ledger-cluster.md): its HTTP/JSON API on --http-addr, raft on its --peers address.",
		Flags: append([]cli.Flag{
			dirFlag(),
			addrFlag(),
			&cli.StringFlag{Name: "http-addr", Value: server.DefaultHTTPAddr, EnvVars: []string{"LEDGER_HTTP_ADDR"},
				Usage: `address of the HTTP/JSON API and /metrics; "off" disables it`},
			accountsFlag(),
			waitStrategyFlag(),
			&cli.Int64Flag{Name: "snapshot-every", EnvVars: []string{"LEDGER_SNAPSHOT_EVERY"},
				Usage: "transactions between persisted snapshots (0: the ledger's default; negative: off)"},
			&cli.DurationFlag{Name: "dedup-retention", Value: ledger.DefaultDedupRetention, EnvVars: []string{"LEDGER_DEDUP_RETENTION"},
				Usage: "how long a user_ref is remembered across restarts: a retry within it is a duplicate (negative: only the in-memory window)"},
			&cli.Uint64Flag{Name: "dedup-retention-txs", EnvVars: []string{"LEDGER_DEDUP_RETENTION_TXS"},
				Usage: "also forget a user_ref once this many transactions followed it (0: no count limit)"},
			indexFlag("keep the history and query indexes (without it history, query and lookup-transfers requests fail with index_off); " +
				"costs CPU and latency on every transaction: see docs/ledger.md"),
			disableIndexFlag(),
			&cli.IntFlag{Name: "max-conns", Value: server.DefaultMaxConns, EnvVars: []string{"LEDGER_MAX_CONNS"},
				Usage: "most open TCP connections"},
			&cli.IntFlag{Name: "max-inflight", Value: server.DefaultMaxInFlight, EnvVars: []string{"LEDGER_MAX_INFLIGHT"},
				Usage: "most requests in flight per connection"},
			&cli.IntFlag{Name: "max-frame", Value: 4 << 20, EnvVars: []string{"LEDGER_MAX_FRAME"},
				Usage: "largest request frame (and HTTP body), bytes"},
			&cli.IntFlag{Name: "max-batch", Value: server.DefaultMaxBatch, EnvVars: []string{"LEDGER_MAX_BATCH"},
				Usage: "most ops in one submit"},
			&cli.DurationFlag{Name: "idle-timeout", Value: server.DefaultIdleTimeout, EnvVars: []string{"LEDGER_IDLE_TIMEOUT"},
				Usage: "close connections idle this long"},
			&cli.DurationFlag{Name: "read-timeout", Value: server.DefaultReadTimeout, EnvVars: []string{"LEDGER_READ_TIMEOUT"},
				Usage: "longest a started frame may take to arrive"},
			&cli.DurationFlag{Name: "write-timeout", Value: server.DefaultWriteTimeout, EnvVars: []string{"LEDGER_WRITE_TIMEOUT"},
				Usage: "close connections whose answers cannot be written this long (clients that do not read)"},
			&cli.IntFlag{Name: "max-http-conns", Value: server.DefaultMaxHTTPConns, EnvVars: []string{"LEDGER_MAX_HTTP_CONNS"},
				Usage: "most open HTTP connections"},
			&cli.StringFlag{Name: "token-file", EnvVars: []string{"LEDGER_TOKEN_FILE"},
				Usage: "file of bearer tokens, one a line: \"read_write SECRET\" or \"read_only SECRET\""},
			&cli.StringFlag{Name: "token", EnvVars: []string{"LEDGER_TOKEN"},
				Usage: "one read_write bearer token (prefer LEDGER_TOKEN or --token-file: flags show in ps)"},
			&cli.StringFlag{Name: "tls-cert", EnvVars: []string{"LEDGER_TLS_CERT"}, Usage: "PEM certificate chain of both listeners"},
			&cli.StringFlag{Name: "tls-key", EnvVars: []string{"LEDGER_TLS_KEY"}, Usage: "PEM key of --tls-cert"},
			&cli.StringFlag{Name: "tls-client-ca", EnvVars: []string{"LEDGER_TLS_CLIENT_CA"},
				Usage: "PEM CA(s) client certificates must chain to (mutual TLS); needs --tls-cert"},
			&cli.BoolFlag{Name: "insecure", EnvVars: []string{"LEDGER_INSECURE"},
				Usage: "listen beyond loopback without tokens or TLS (anyone who reaches the port can move money)"},
			&cli.StringFlag{Name: "log-level", Value: "info", EnvVars: []string{"LEDGER_LOG_LEVEL"},
				Usage: "debug (one line per HTTP request), info, warn or error"},
			&cli.StringFlag{Name: "log-format", Value: "text", EnvVars: []string{"LEDGER_LOG_FORMAT"},
				Usage: "text or json (log/slog), on stderr"},
			&cli.BoolFlag{Name: "pprof", EnvVars: []string{"LEDGER_PPROF"},
				Usage: "serve runtime profiles under /debug/pprof/ on the HTTP listener (read_write token)"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 30 * time.Second, EnvVars: []string{"LEDGER_SHUTDOWN_TIMEOUT"},
				Usage: "longest to wait for in-flight requests on shutdown"},
		}, clusterFlags()...),
		Action: serve,
	}
}

// serveLogger builds the slog logger of --log-level and --log-format.
func serveLogger(c *cli.Context) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, exitcode.Usage("serve: --log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.String("log-format") {
	case "text":
		return slog.New(slog.NewTextHandler(c.App.ErrWriter, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(c.App.ErrWriter, opts)), nil
	}
	return nil, exitcode.Usage("serve: --log-format %q: want text or json", c.String("log-format"))
}

// serveSecurity fills cfg's tokens and TLS from the flags.
func serveSecurity(c *cli.Context, cfg *server.Config) error {
	if path := c.String("token-file"); path != "" {
		toks, err := server.ReadTokenFile(path)
		if err != nil {
			return err
		}
		cfg.Tokens = toks
	}
	if t := c.String("token"); t != "" {
		cfg.Tokens = append(cfg.Tokens, server.Token{Secret: t, Scope: server.ReadWrite})
	}
	cert, key, ca := c.String("tls-cert"), c.String("tls-key"), c.String("tls-client-ca")
	switch {
	case cert == "" && key == "" && ca == "":
		return nil
	case cert == "" || key == "":
		return fmt.Errorf("%w: --tls-cert and --tls-key go together (and --tls-client-ca needs them)", server.ErrConfig)
	}
	tcfg, err := server.LoadTLS(cert, key, ca)
	cfg.TLS = tcfg
	return err
}

func serve(c *cli.Context) error {
	if c.NArg() != 0 {
		return exitcode.Usage("serve: unexpected arguments %v", c.Args().Slice())
	}
	ws, err := pressure.ParseWaitStrategy(c.String("wait-strategy"))
	if err != nil {
		return exitcode.Usage("serve: %v", err)
	}
	if err := checkIndexFlags(c, "serve"); err != nil {
		return err
	}
	if c.IsSet("cluster-id") {
		return serveCluster(c, ws)
	}
	logger, err := serveLogger(c)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	l, err := ledger.Open(ledger.Config{Dir: c.String("dir"), MaxAccounts: c.Uint64("max-accounts"),
		WaitStrategy: ws, SnapshotEvery: c.Int64("snapshot-every"),
		DedupRetention: c.Duration("dedup-retention"), DedupRetentionTxs: c.Uint64("dedup-retention-txs"),
		Index: c.Bool("index")})
	if errors.Is(err, ledger.ErrConfig) {
		return exitcode.Usage("serve: %v", err)
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", c.String("dir"), err)
	}
	if ws == pressure.LowLatency {
		// Stages that never park keep the Go scheduler's run queue full, and
		// it polls the network only when a P runs out of goroutines or from
		// sysmon (every 10 ms): measured submit-and-wait P50 is about 16 ms,
		// against 0.6 ms under balanced.
		logger.Warn("wait strategy low-latency keeps every stage polling: network requests wait up to 10-20 ms for the Go runtime's network poll; balanced (the default) suits a server")
	}
	cfg := server.Config{
		Addr: c.String("addr"), HTTPAddr: c.String("http-addr"),
		MaxConns: c.Int("max-conns"), MaxHTTPConns: c.Int("max-http-conns"), MaxInFlight: c.Int("max-inflight"),
		MaxFrame: c.Int("max-frame"), MaxBatch: c.Int("max-batch"),
		IdleTimeout: c.Duration("idle-timeout"), ReadTimeout: c.Duration("read-timeout"),
		WriteTimeout: c.Duration("write-timeout"), Logger: logger, Insecure: c.Bool("insecure"), Pprof: c.Bool("pprof"),
	}
	var s *server.Server
	if err = serveSecurity(c, &cfg); err == nil {
		s, err = server.New(l, cfg)
	}
	if err == nil {
		err = s.Start()
	}
	if err != nil {
		_ = l.Close()
		if errors.Is(err, server.ErrExposed) {
			return exitcode.Usage("serve: %v: add --token-file (or LEDGER_TOKEN) and --tls-cert with --tls-key, "+
				"or bind to 127.0.0.1; --insecure listens anyway", err)
		}
		if errors.Is(err, server.ErrConfig) || errors.Is(err, server.ErrTokenFile) || errors.Is(err, server.ErrTLSFiles) {
			return exitcode.Usage("serve: %v", err) // a flag out of range, or files that do not load
		}
		return err
	}
	x, _ := l.Indexes()
	httpAt := "off"
	if a := s.HTTPAddr(); a != nil {
		httpAt = "http://" + a.String()
		if cfg.TLS != nil {
			httpAt = "https://" + a.String()
		}
	}
	fmt.Fprintf(c.App.Writer, "ledger: serving %s (committed %d) on tcp %s, http %s\n", c.String("dir"), x.Committed, s.Addr(), httpAt)
	<-ctx.Done()
	stop()
	fmt.Fprintln(c.App.Writer, "ledger: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), c.Duration("shutdown-timeout"))
	defer cancel()
	serr := s.Shutdown(sctx)
	cerr := l.Close()
	if serr != nil {
		return fmt.Errorf("shutdown: %w", serr)
	}
	if cerr != nil {
		return fmt.Errorf("close ledger: %w", cerr)
	}
	fmt.Fprintln(c.App.Writer, "ledger: stopped cleanly")
	return nil
}
