package main

import (
	"crypto/tls"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/ledger/client"
	"github.com/lanework/lanework/ledger/server"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

// Flags shared by the commands that talk to a server.
func addrFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "addr", Value: server.DefaultAddr, EnvVars: []string{"LEDGER_ADDR"},
		Usage: "TCP address of the ledger server (binary protocol); a cluster's replicas separated by commas (it follows the leader)"}
}

func timeoutFlag() *cli.DurationFlag {
	return &cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, EnvVars: []string{"LEDGER_TIMEOUT"},
		Usage: "give up on the server after this long"}
}

func clientFlags() []cli.Flag {
	return append([]cli.Flag{addrFlag(), timeoutFlag()}, securityFlags()...)
}

// securityFlags are how a client command authenticates and verifies the
// server: the token of a server started with tokens, and TLS.
func securityFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "token", EnvVars: []string{"LEDGER_TOKEN"},
			Usage: "bearer token for a server with --token-file (prefer LEDGER_TOKEN: flags show in ps)"},
		&cli.BoolFlag{Name: "tls", EnvVars: []string{"LEDGER_TLS"},
			Usage: "speak TLS, verifying the server against the system roots (implied by --tls-ca)"},
		&cli.StringFlag{Name: "tls-ca", EnvVars: []string{"LEDGER_TLS_CA"},
			Usage: "PEM file of the CA(s) the server's certificate must chain to; implies --tls"},
		&cli.StringFlag{Name: "tls-client-cert", EnvVars: []string{"LEDGER_TLS_CLIENT_CERT"},
			Usage: "PEM client certificate, for a server with --tls-client-ca"},
		&cli.StringFlag{Name: "tls-client-key", EnvVars: []string{"LEDGER_TLS_CLIENT_KEY"},
			Usage: "PEM key of --tls-client-cert"},
	}
}

// clientOptions turns the security flags into client options.
func clientOptions(c *cli.Context) ([]client.Option, error) {
	var opts []client.Option
	if t := c.String("token"); t != "" {
		opts = append(opts, client.WithToken(t))
	}
	if !c.Bool("tls") && c.String("tls-ca") == "" && c.String("tls-client-cert") == "" {
		return opts, nil
	}
	cfg := &tls.Config{}
	if ca := c.String("tls-ca"); ca != "" {
		pool, err := server.LoadCertPool(ca)
		if err != nil {
			return nil, exitcode.Usage("--tls-ca: %v", err)
		}
		cfg.RootCAs = pool
	}
	if cert, key := c.String("tls-client-cert"), c.String("tls-client-key"); cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, exitcode.Usage("--tls-client-cert/--tls-client-key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return append(opts, client.WithTLS(cfg)), nil
}

func dirFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "dir", Value: "./data", EnvVars: []string{"LEDGER_DIR"},
		Usage: "ledger data directory (pebble); created if missing"}
}

// offlineDirFlag is --dir for the commands that read a closed directory.
func offlineDirFlag() *cli.StringFlag {
	f := dirFlag()
	f.Usage = "closed ledger data directory; read, never written (a directory a server has open is refused)"
	return f
}

func accountsFlag() *cli.Uint64Flag {
	return &cli.Uint64Flag{Name: "max-accounts", Value: 1_000_000, EnvVars: []string{"LEDGER_MAX_ACCOUNTS"},
		Usage: "number of accounts; fixed when the directory is created"}
}

func waitStrategyFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "wait-strategy", Value: "balanced", EnvVars: []string{"LEDGER_WAIT_STRATEGY"},
		Usage: "how idle pipeline stages wait: low-latency, balanced or low-cpu"}
}

func quietFlag() *cli.BoolFlag {
	return &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, EnvVars: []string{"LEDGER_QUIET"},
		Usage: "no progress output (progress is only ever drawn on a terminal)"}
}

// indexFlag is --index: keep the ledger's history and query indexes
// (ledger.Config.Index), off by default.
func indexFlag(usage string) *cli.BoolFlag {
	return &cli.BoolFlag{Name: "index", EnvVars: []string{"LEDGER_INDEX"}, Usage: usage}
}

// disableIndexFlag is the former --disable-index, hidden: checkIndexFlags
// refuses it, naming --index. The index is off by default now, so a run
// that turned it off needs only to drop the flag.
func disableIndexFlag() *cli.BoolFlag {
	return &cli.BoolFlag{Name: "disable-index", EnvVars: []string{"LEDGER_DISABLE_INDEX"}, Hidden: true}
}

// checkIndexFlags refuses --disable-index (or LEDGER_DISABLE_INDEX).
func checkIndexFlags(c *cli.Context, cmd string) error {
	if c.IsSet("disable-index") {
		return exitcode.Usage("%s: --disable-index (LEDGER_DISABLE_INDEX) is gone: the history and query indexes are off unless --index (LEDGER_INDEX) turns them on; drop it", cmd)
	}
	return nil
}
