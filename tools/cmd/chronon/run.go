package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/chronon"
	"github.com/lanework/lanework/tools/internal/exitcode"
	"github.com/lanework/lanework/tools/internal/interrupt"
	"github.com/lanework/lanework/tools/internal/progress"
)

// chunk is how many cycles run between checks for progress and signals.
const chunk = 1 << 16

// maxAlignedChunk bounds a chunk stretched to a whole counter interval; past
// it, an interrupted run's last counter row covers a partial interval.
const maxAlignedChunk = 1 << 22

func runCommand() *cli.Command {
	cmd := &cli.Command{
		Name:      "run",
		Usage:     "run a topology until a unit terminates it or the cycle limit",
		ArgsUsage: "topology.yaml",
		Description: "Counters and trace are written to a temporary file beside FILE and renamed to FILE once\n" +
			"complete. SIGINT or SIGTERM stops the run at the end of the current chunk of cycles (with\n" +
			"--counters, a whole counter interval), writes both files and the report as they stand, and\n" +
			"exits 130 or 143.",
		Flags: []cli.Flag{
			&cli.Uint64Flag{Name: "cycles", EnvVars: []string{"CHRONON_CYCLES"}, Usage: "cycle limit (overrides simulation.cycles)"},
			&cli.IntFlag{Name: "workers", EnvVars: []string{"CHRONON_WORKERS"}, Usage: "worker goroutines (overrides simulation.workers)"},
			&cli.StringFlag{Name: "counters", EnvVars: []string{"CHRONON_COUNTERS"}, Usage: "write per-interval counter deltas as CSV to `FILE`"},
			&cli.Uint64Flag{Name: "counter-interval", Value: 100000, EnvVars: []string{"CHRONON_COUNTER_INTERVAL"}, Usage: "cycles per counter row"},
			&cli.StringFlag{Name: "trace", EnvVars: []string{"CHRONON_TRACE"}, Usage: "write events as Chrome trace JSON (Perfetto) to `FILE`"},
			&cli.BoolFlag{Name: "progress", Value: true, EnvVars: []string{"CHRONON_PROGRESS"}, Usage: "show a progress bar on stderr when it is a terminal"},
			&cli.DurationFlag{Name: "progress-every", Value: 500 * time.Millisecond, EnvVars: []string{"CHRONON_PROGRESS_EVERY"},
				Usage: "shortest time between progress redraws (0: no progress)"},
			paramFlag(),
			&cli.BoolFlag{Name: "dump-config", EnvVars: []string{"CHRONON_DUMP_CONFIG"}, Usage: "print the effective topology (groups and buses expanded, overrides applied) as YAML and exit"},
			quietFlag(),
			jsonFlag("print the result as JSON"),
		},
		Action: run,
	}
	cmd.Flags = append(cmd.Flags, logFlags()...)
	return cmd
}

// runResult is what run prints, as text or --json.
type runResult struct {
	Path        string            `json:"path"`
	Cycles      uint64            `json:"cycles"`
	Elapsed     time.Duration     `json:"elapsed_ns"`
	Rate        float64           `json:"mcycles_per_second"`
	Workers     int               `json:"workers"` // the engine's: 1 when it runs sequentially
	Sequential  string            `json:"sequential_reason,omitempty"`
	Reports     map[string]string `json:"reports,omitempty"`
	Termination *termination      `json:"termination,omitempty"`
	Interrupted bool              `json:"interrupted,omitempty"`
	order       []string          // of Reports, as the simulation lists its units
}

type termination struct {
	Unit    string `json:"unit"`
	Cycle   uint64 `json:"cycle"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Code    int    `json:"code"`
}

func run(c *cli.Context) (err error) {
	path, err := topologyArg(c)
	if err != nil {
		return err
	}
	params, err := paramOverrides(c)
	if err != nil {
		return err
	}
	logOpts, err := logOption(c)
	if err != nil {
		return err
	}
	s, cfg, err := chronon.Load(path, registry(), append(logOpts, chronon.WithParams(params...))...)
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	if c.IsSet("cycles") {
		cfg.Cycles = c.Uint64("cycles")
	}
	if c.IsSet("workers") {
		cfg.Workers = c.Int("workers")
	}
	if c.Bool("dump-config") {
		out, err := cfg.Effective.YAML(cfg)
		if err != nil {
			return cli.Exit(err.Error(), 1)
		}
		_, err = c.App.Writer.Write(out)
		return err
	}
	if cfg.Cycles == 0 {
		return exitcode.Usage("run: no cycle limit: set simulation.cycles or --cycles")
	}
	if err := s.SetWorkers(cfg.Workers); err != nil {
		return exitcode.Usage("run: %v", err)
	}
	var outs outputs
	defer func() { err = errors.Join(err, outs.abandon()) }()
	step := uint64(chunk)
	if name := c.String("counters"); name != "" {
		f, err := outs.create(name)
		if err != nil {
			return err
		}
		every := c.Uint64("counter-interval")
		if err := s.DumpCounters(f, every); err != nil {
			return exitcode.Usage("run: %v", err)
		}
		if aligned := (chunk + every - 1) / every * every; aligned <= maxAlignedChunk {
			step = aligned // chunks end on interval boundaries: no partial last row
		}
	}
	if name := c.String("trace"); name != "" {
		f, err := outs.create(name)
		if err != nil {
			return err
		}
		s.TraceTo(f)
	}

	every := c.Duration("progress-every")
	bar := progress.New(c.App.ErrWriter, c.Bool("progress") && every > 0 && !c.Bool("quiet"), int64(cfg.Cycles), "", every)
	start := time.Now()
	var runErr error
	for s.Cycle() < cfg.Cycles && c.Context.Err() == nil {
		if runErr = s.Run(min(step, cfg.Cycles-s.Cycle())); runErr != nil {
			break
		}
		if _, done := s.Termination(); done {
			break
		}
		bar.Set(int64(s.Cycle()), fmt.Sprintf("%.2f Mcycles/s", rate(s.Cycle(), time.Since(start))))
	}
	elapsed := time.Since(start)
	sig := interrupt.Cause(c.Context)
	bar.Done(sig == nil && runErr == nil)

	res := runResult{Path: path, Cycles: s.Cycle(), Elapsed: elapsed, Rate: rate(s.Cycle(), elapsed),
		Interrupted: sig != nil, Reports: map[string]string{}}
	res.Workers, res.Sequential = s.Engine()
	if res.Workers > 1 {
		res.Sequential = ""
	}
	closeErr := s.Close()
	if closeErr == nil {
		closeErr = outs.commit()
	}
	for _, name := range s.Units() {
		u, _ := s.Unit(name)
		if r, ok := u.(chronon.Reporter); ok {
			res.Reports[name] = r.Report()
			res.order = append(res.order, name)
		}
	}
	if t, ok := s.Termination(); ok {
		res.Termination = &termination{Unit: t.Unit, Cycle: t.Cycle, Reason: t.Reason, Message: t.Message, Code: t.Code}
	}
	if c.Bool("json") {
		if err := writeJSON(c.App.Writer, res); err != nil {
			return err
		}
	} else {
		if cfg.Workers > 1 && !c.Bool("quiet") {
			if res.Workers > 1 {
				fmt.Fprintf(c.App.ErrWriter, "engine: parallel, %d workers\n", res.Workers)
			} else {
				fmt.Fprintf(c.App.ErrWriter, "engine: running sequentially (%d workers requested): %s\n", cfg.Workers, res.Sequential)
			}
		}
		printRun(c.App.Writer, &res)
	}
	switch {
	case runErr != nil:
		return cli.Exit(runErr.Error(), 1)
	case closeErr != nil:
		return cli.Exit(closeErr.Error(), 1)
	case sig != nil:
		return sig
	case res.Termination != nil && res.Termination.Code != 0:
		return cli.Exit(fmt.Sprintf("terminated with code %d", res.Termination.Code), res.Termination.Code)
	}
	return nil
}

func printRun(w io.Writer, r *runResult) {
	fmt.Fprintf(w, "ran %d cycles in %v (%.2f Mcycles/s)\n", r.Cycles, r.Elapsed.Round(time.Millisecond), r.Rate)
	for _, name := range r.order {
		fmt.Fprintf(w, "%s: %s\n", name, r.Reports[name])
	}
	switch t := r.Termination; {
	case t != nil:
		fmt.Fprintf(w, "terminated by %s at cycle %d: %s: %s\n", t.Unit, t.Cycle, t.Reason, t.Message)
	case r.Interrupted:
		fmt.Fprintf(w, "interrupted at cycle %d\n", r.Cycles)
	default:
		fmt.Fprintf(w, "reached the cycle limit without a termination request\n")
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func rate(cycles uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(cycles) / d.Seconds() / 1e6
}

// outputs are the files a run writes. Each is written to a temporary file in
// the target's directory and renamed over the target by commit, so FILE is
// never half-written; abandon removes whatever was not committed.
type outputs struct {
	files []output
}

type output struct {
	f      *os.File
	target string
	done   bool
}

func (o *outputs) create(name string) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*.tmp")
	if err != nil {
		return nil, cli.Exit(err.Error(), 2)
	}
	o.files = append(o.files, output{f: f, target: name})
	return f, nil
}

// commit closes every file and renames it to its target.
func (o *outputs) commit() error {
	var errs []error
	for i := range o.files {
		f := &o.files[i]
		if err := f.f.Close(); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.Rename(f.f.Name(), f.target); err != nil {
			errs = append(errs, err)
			continue
		}
		f.done = true
	}
	return errors.Join(errs...)
}

// abandon closes and removes the files commit did not put in place.
func (o *outputs) abandon() error {
	var errs []error
	for _, f := range o.files {
		if f.done {
			continue
		}
		_ = f.f.Close() // may be closed already
		if err := os.Remove(f.f.Name()); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return cli.Exit(errors.Join(errs...).Error(), 1)
	}
	return nil
}
