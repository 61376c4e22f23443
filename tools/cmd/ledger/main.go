// Command ledger serves a lanework ledger over the network and talks to a
// running server.
//
// Usage:
//
//	ledger serve [--dir ./data] [--addr 127.0.0.1:7070] [--http-addr 127.0.0.1:7071]
//	ledger account create ID --ledger L [--code C] [--flags F,...]
//	ledger account lookup ID
//	ledger deposit ACCOUNT AMOUNT      ledger withdraw ACCOUNT AMOUNT
//	ledger transfer FROM TO AMOUNT     ledger balance ACCOUNT
//	ledger tx ID                       ledger indexes
//	ledger snapshot
//	ledger bench [--addr HOST:PORT] [--duration 10s] [--json]
//
// Every flag has an environment fallback (LEDGER_DIR, LEDGER_ADDR, ...; see
// --help); the commands that print a result take --json, with the HTTP API's
// field names. Exit status: 0 ok (including an idempotent retry that finds
// its transaction already applied), 1 failure (including a transaction that
// executed but failed, such as exceeds_credits, and a bench run with
// failed calls), 2 bad usage, 130/143 interrupted by SIGINT/SIGTERM.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/tools/internal/exitcode"
	"github.com/lanework/lanework/tools/internal/interrupt"
	"github.com/lanework/lanework/tools/internal/version"
)

func main() {
	ctx, stop := interrupt.Context(context.Background())
	err := newApp(os.Stdout, os.Stderr).RunContext(ctx, os.Args)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ledger:", err)
	}
	os.Exit(exitcode.Of(err))
}

func onUsageError(c *cli.Context, err error, _ bool) error {
	// The flag parser takes a negative number for a flag: say what is wrong
	// with the argument instead.
	if v, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
		if _, perr := strconv.ParseInt("-"+v, 10, 64); perr == nil {
			return exitcode.Usage("%s: %q is not a non-negative integer", c.Command.Name, "-"+v)
		}
	}
	return exitcode.Usage("%v", err)
}

// newApp returns the CLI writing to stdout and stderr. It never exits the
// process: errors carry their exit status (see exitCode).
func newApp(stdout, stderr io.Writer) *cli.App {
	cmds := []*cli.Command{serveCommand(), accountCommand(), depositCommand(), withdrawCommand(), transferCommand(),
		balanceCommand(), txCommand(), indexesCommand(), snapshotCommand(), historyCommand(), queryCommand(), benchCommand(), verifyCommand(), dumpCommand(), recoverCommand(), clusterCommand()}
	for _, c := range cmds {
		c.OnUsageError = onUsageError
	}
	return &cli.App{
		Name:      "ledger",
		Usage:     "serve and use a lanework ledger",
		Writer:    stdout,
		ErrWriter: stderr,
		Version:   version.String(),
		Description: `EXIT STATUS:
   0    success, including an idempotent retry that finds its transaction already applied
   1    failure: a transaction that executed but failed (exceeds_credits, ...), a server
        or storage error, or a bench run with failed calls
   2    bad usage: unknown command or flag, a malformed argument
   130  interrupted (SIGINT); 143  terminated (SIGTERM)`,
		HideHelpCommand: true,
		OnUsageError:    onUsageError,
		ExitErrHandler:  func(*cli.Context, error) {}, // main decides the status
		CommandNotFound: func(c *cli.Context, name string) {
			fmt.Fprintf(c.App.ErrWriter, "ledger: unknown command %q (see ledger --help)\n", name)
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return exitcode.Usage("unknown command %q (see ledger --help)", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		Commands: cmds,
	}
}

func isNegativeNumber(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// args checks the number of positional arguments and parses them as
// unsigned integers named by names.
func args(c *cli.Context, names ...string) ([]uint64, error) {
	// The flag parser stops at the first argument, so a flag after it
	// arrives here as an argument.
	all := c.Args().Slice()
	for i, a := range all {
		if strings.HasPrefix(a, "-") && !isNegativeNumber(a) {
			return nil, exitcode.Usage("%s: flag %s after the arguments; flags go first: ledger %s %s %s",
				c.Command.Name, a, c.Command.Name, strings.Join(all[i:], " "), strings.Join(all[:i], " "))
		}
	}
	if c.NArg() != len(names) {
		return nil, exitcode.Usage("%s: want %d arguments (%v), got %d", c.Command.Name, len(names), names, c.NArg())
	}
	out := make([]uint64, len(names))
	for i, n := range names {
		v, err := strconv.ParseUint(c.Args().Get(i), 10, 64)
		if err != nil {
			return nil, exitcode.Usage("%s: %s %q is not a non-negative integer", c.Command.Name, n, c.Args().Get(i))
		}
		out[i] = v
	}
	return out, nil
}
