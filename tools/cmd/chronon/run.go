package main

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/chronon"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

// chunk is how many cycles run between progress checks.
const chunk = 1 << 16

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a topology until a unit terminates it or the cycle limit",
		ArgsUsage: "topology.yaml",
		Flags: []cli.Flag{
			&cli.Uint64Flag{Name: "cycles", Usage: "cycle limit (overrides simulation.cycles)"},
			&cli.IntFlag{Name: "workers", Usage: "worker goroutines (overrides simulation.workers)"},
			&cli.StringFlag{Name: "counters", Usage: "write per-interval counter deltas as CSV to `FILE`"},
			&cli.Uint64Flag{Name: "counter-interval", Value: 100000, Usage: "cycles per counter row"},
			&cli.StringFlag{Name: "trace", Usage: "write events as Chrome trace JSON (Perfetto) to `FILE`"},
			&cli.BoolFlag{Name: "progress", Value: true, Usage: "show a live progress line on stderr"},
		},
		Action: run,
	}
}

func run(c *cli.Context) (err error) {
	path, err := topologyArg(c)
	if err != nil {
		return err
	}
	s, cfg, err := chronon.Load(path, registry())
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	if c.IsSet("cycles") {
		cfg.Cycles = c.Uint64("cycles")
	}
	if c.IsSet("workers") {
		cfg.Workers = c.Int("workers")
	}
	if cfg.Cycles == 0 {
		return exitcode.Usage("run: no cycle limit: set simulation.cycles or --cycles")
	}
	if err := s.SetWorkers(cfg.Workers); err != nil {
		return exitcode.Usage("run: %v", err)
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			if cerr := f.Close(); cerr != nil && err == nil {
				err = cli.Exit(cerr.Error(), 1)
			}
		}
	}()
	create := func(name string) (*os.File, error) {
		f, err := os.Create(name)
		if err != nil {
			return nil, cli.Exit(err.Error(), 2)
		}
		files = append(files, f)
		return f, nil
	}
	if name := c.String("counters"); name != "" {
		f, err := create(name)
		if err != nil {
			return err
		}
		if err := s.DumpCounters(f, c.Uint64("counter-interval")); err != nil {
			return exitcode.Usage("run: %v", err)
		}
	}
	if name := c.String("trace"); name != "" {
		f, err := create(name)
		if err != nil {
			return err
		}
		s.TraceTo(f)
	}

	start := time.Now()
	last := start
	progress := c.Bool("progress")
	var runErr error
	for s.Cycle() < cfg.Cycles {
		if runErr = s.Run(min(chunk, cfg.Cycles-s.Cycle())); runErr != nil {
			break
		}
		if _, done := s.Termination(); done {
			break
		}
		if now := time.Now(); progress && now.Sub(last) >= 500*time.Millisecond {
			last = now
			fmt.Fprintf(c.App.ErrWriter, "\rcycle %d of %d  %.2f Mcycles/s ", s.Cycle(), cfg.Cycles, rate(s.Cycle(), now.Sub(start)))
		}
	}
	elapsed := time.Since(start)
	if progress && last != start {
		fmt.Fprintln(c.App.ErrWriter)
	}
	if cfg.Workers > 1 {
		if n, reason := s.Engine(); n > 1 {
			fmt.Fprintf(c.App.ErrWriter, "engine: parallel, %d workers\n", n)
		} else {
			fmt.Fprintf(c.App.ErrWriter, "engine: running sequentially (%d workers requested): %s\n", cfg.Workers, reason)
		}
	}
	closeErr := s.Close()
	w := c.App.Writer
	fmt.Fprintf(w, "ran %d cycles in %v (%.2f Mcycles/s)\n", s.Cycle(), elapsed.Round(time.Millisecond), rate(s.Cycle(), elapsed))
	for _, name := range s.Units() {
		u, _ := s.Unit(name)
		if r, ok := u.(chronon.Reporter); ok {
			fmt.Fprintf(w, "%s: %s\n", name, r.Report())
		}
	}
	if runErr != nil {
		return cli.Exit(runErr.Error(), 1)
	}
	if closeErr != nil {
		return cli.Exit(closeErr.Error(), 1)
	}
	if t, ok := s.Termination(); ok {
		fmt.Fprintf(w, "terminated by %s at cycle %d: %s: %s\n", t.Unit, t.Cycle, t.Reason, t.Message)
		if t.Code != 0 {
			return cli.Exit(fmt.Sprintf("terminated with code %d", t.Code), t.Code)
		}
		return nil
	}
	fmt.Fprintf(w, "reached the cycle limit without a termination request\n")
	return nil
}

func rate(cycles uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(cycles) / d.Seconds() / 1e6
}
