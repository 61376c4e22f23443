// Command chronon runs, validates and benchmarks chronon cycle simulations
// described by YAML topologies.
//
// Usage:
//
//	chronon run [--cycles N] [--workers N] [--counters out.csv] [--trace out.json] [-p unit.param=value] [--dump-config] topology.yaml
//	chronon sweep -g unit.param=v1,v2 [-g ...] [--jobs N] [-o out.csv] topology.yaml
//	chronon validate topology.yaml
//	chronon bench [--count 5]
//
// The unit types known to topologies are those of the chronon examples:
// cpu.* (examples/cpupipeline) and minimal.* (examples/minimal).
//
// Every flag has a CHRONON_* environment fallback; run and validate take
// --json. Exit status: 0 on success or a termination request with code 0;
// the requested code for other termination requests; 1 for a failed run; 2
// for an invalid topology or bad usage; 130/143 when SIGINT/SIGTERM stopped
// a run (its counters, trace and report are written as they stood).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/chronon"
	"github.com/lanework/lanework/chronon/examples/cpupipeline"
	"github.com/lanework/lanework/chronon/examples/minimal"
	"github.com/lanework/lanework/tools/internal/exitcode"
	"github.com/lanework/lanework/tools/internal/interrupt"
	"github.com/lanework/lanework/tools/internal/version"
)

func main() {
	ctx, stop := interrupt.Context(context.Background())
	err := newApp(os.Stdout, os.Stderr).RunContext(ctx, os.Args)
	stop()
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "chronon: ") { // the library's errors name it already
			msg = "chronon: " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
	}
	os.Exit(exitcode.Of(err))
}

func onUsageError(_ *cli.Context, err error, _ bool) error { return exitcode.Usage("%v", err) }

// newApp returns the CLI writing to stdout and stderr. It never exits the
// process: errors carry their exit status (see exitCode).
func newApp(stdout, stderr io.Writer) *cli.App {
	cmds := []*cli.Command{runCommand(), sweepCommand(), validateCommand(), benchCommand()}
	for _, c := range cmds {
		c.OnUsageError = onUsageError // a short message and status 2, not the help page
	}
	return &cli.App{
		Name:      "chronon",
		Usage:     "run cycle-accurate chronon simulations",
		Writer:    stdout,
		ErrWriter: stderr,
		Version:   version.String(),
		Description: `EXIT STATUS:
   0    success, or a termination request with code 0
   N    the code of a termination request (1-125)
   1    a failed run (a unit fault, an I/O error writing counters or trace)
   2    an invalid topology or bad usage
   130  interrupted (SIGINT); 143  terminated (SIGTERM): run stops at the end of a chunk of
        cycles and writes its counters, trace and report as they stand`,
		HideHelpCommand: true,
		// -p and --grid values contain commas (a grid's values, YAML lists).
		DisableSliceFlagSeparator: true,
		OnUsageError:              onUsageError,
		ExitErrHandler:            func(*cli.Context, error) {}, // main decides the status
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return exitcode.Usage("unknown command %q (see chronon --help)", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		Commands: cmds,
	}
}

// registry returns the unit types topologies may use.
func registry() *chronon.Registry {
	r := chronon.NewRegistry()
	cpupipeline.Register(r)
	minimal.Register(r)
	return r
}

func topologyArg(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", exitcode.Usage("%s: want exactly one topology file, got %d arguments", c.Command.Name, c.NArg())
	}
	return c.Args().First(), nil
}

func quietFlag() *cli.BoolFlag {
	return &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, EnvVars: []string{"CHRONON_QUIET"},
		Usage: "no progress or engine notes on stderr (progress is only ever drawn on a terminal)"}
}

func jsonFlag(usage string) *cli.BoolFlag {
	return &cli.BoolFlag{Name: "json", EnvVars: []string{"CHRONON_JSON"}, Usage: usage}
}
