package main

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/ledger/server"
)

// Flags shared by the commands that talk to a server.
func addrFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "addr", Value: server.DefaultAddr, EnvVars: []string{"LEDGER_ADDR"},
		Usage: "TCP address of the ledger server (binary protocol)"}
}

func timeoutFlag() *cli.DurationFlag {
	return &cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, EnvVars: []string{"LEDGER_TIMEOUT"},
		Usage: "give up on the server after this long"}
}

func clientFlags() []cli.Flag { return []cli.Flag{addrFlag(), timeoutFlag()} }

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
