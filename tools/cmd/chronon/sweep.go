package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/chronon"
	"github.com/lanework/lanework/tools/internal/exitcode"
	"github.com/lanework/lanework/tools/internal/interrupt"
)

func sweepCommand() *cli.Command {
	return &cli.Command{
		Name:      "sweep",
		Usage:     "run a topology at every point of a parameter grid, into one CSV with a row per point",
		ArgsUsage: "topology.yaml",
		Description: "Each --grid unit.param=v1,v2,... is one axis; the points are every combination, the last\n" +
			"axis varying fastest, and run --jobs at a time, each on its own simulation. A row holds the\n" +
			"point's values, its final cycle, termination and every counter's total and derived counter\n" +
			"over the run, in grid order whatever order the points finish in.",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "grid", Aliases: []string{"g"}, Required: true, EnvVars: []string{"CHRONON_GRID"}, Usage: "an axis, `unit.param=v1,v2,...` (repeatable)"},
			paramFlag(),
			&cli.Uint64Flag{Name: "cycles", EnvVars: []string{"CHRONON_CYCLES"}, Usage: "cycle limit per point (overrides simulation.cycles)"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.GOMAXPROCS(0), EnvVars: []string{"CHRONON_JOBS"}, Usage: "points run at once"},
			&cli.IntFlag{Name: "workers", Value: 1, EnvVars: []string{"CHRONON_WORKERS"}, Usage: "worker goroutines per point"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, EnvVars: []string{"CHRONON_OUTPUT"}, Usage: "write the CSV to `FILE` (default stdout)"},
		},
		Action: sweep,
	}
}

// axis is one grid dimension.
type axis struct {
	unit, param string
	values      []string
}

// point is one run of a sweep, and then its row.
type point struct {
	params []chronon.ParamOverride
	row    []string
	names  []string // of the totals, for the header
	err    error
}

func sweep(c *cli.Context) (err error) {
	path, err := topologyArg(c)
	if err != nil {
		return err
	}
	fixed, err := paramOverrides(c)
	if err != nil {
		return err
	}
	var axes []axis
	for _, g := range c.StringSlice("grid") {
		o, err := chronon.ParseParamOverride(g)
		if err != nil {
			return exitcode.Usage("sweep: --grid: %v", err)
		}
		a := axis{unit: o.Unit, param: o.Param, values: strings.Split(o.Value, ",")}
		if slicesContainEmpty(a.values) {
			return exitcode.Usage("sweep: --grid %s: an empty value", g)
		}
		axes = append(axes, a)
	}
	jobs := c.Int("jobs")
	if jobs < 1 {
		return exitcode.Usage("sweep: --jobs must be at least 1, not %d", jobs)
	}
	points := grid(axes, fixed)
	// Load every point first: a bad value fails the sweep before any runs.
	for i := range points {
		if _, _, err := chronon.Load(path, registry(), chronon.WithParams(points[i].params...)); err != nil {
			return cli.Exit(fmt.Sprintf("sweep: point %d (%s): %v", i, pointName(points[i].params[len(fixed):]), err), 2)
		}
	}
	run := func(p *point) { p.row, p.names, p.err = runPoint(c.Context, path, p.params, c) }
	var wg sync.WaitGroup
	next := make(chan *point)
	for range min(jobs, len(points)) {
		wg.Go(func() {
			for p := range next {
				run(p)
			}
		})
	}
	for i := range points {
		next <- &points[i]
	}
	close(next)
	wg.Wait()
	if sig := interrupt.Cause(c.Context); sig != nil {
		return sig
	}

	w := c.App.Writer
	var outs outputs
	defer func() { err = errors.Join(err, outs.abandon()) }()
	if name := c.String("output"); name != "" {
		f, err := outs.create(name)
		if err != nil {
			return err
		}
		w = f
	}
	if err := writeSweep(w, axes, points); err != nil {
		return cli.Exit(err.Error(), 1)
	}
	return outs.commit()
}

func slicesContainEmpty(v []string) bool {
	for _, s := range v {
		if s == "" {
			return true
		}
	}
	return false
}

// grid returns the points of the axes, the last varying fastest, each
// with the fixed overrides first.
func grid(axes []axis, fixed []chronon.ParamOverride) []point {
	points := []point{{params: fixed}}
	for _, a := range axes {
		var next []point
		for _, p := range points {
			for _, v := range a.values {
				ps := append(append([]chronon.ParamOverride(nil), p.params...), chronon.ParamOverride{Unit: a.unit, Param: a.param, Value: v})
				next = append(next, point{params: ps})
			}
		}
		points = next
	}
	return points
}

func pointName(ps []chronon.ParamOverride) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, " ")
}

// runPoint runs one point and returns its row after the grid values:
// cycles, termination, error, then the totals.
func runPoint(ctx context.Context, path string, params []chronon.ParamOverride, c *cli.Context) ([]string, []string, error) {
	s, cfg, err := chronon.Load(path, registry(), chronon.WithParams(params...))
	if err != nil {
		return nil, nil, err
	}
	if c.IsSet("cycles") {
		cfg.Cycles = c.Uint64("cycles")
	}
	if cfg.Cycles == 0 {
		return nil, nil, exitcode.Usage("sweep: no cycle limit: set simulation.cycles or --cycles")
	}
	if err := s.SetWorkers(c.Int("workers")); err != nil {
		return nil, nil, exitcode.Usage("sweep: %v", err)
	}
	var runErr error
	for s.Cycle() < cfg.Cycles && ctx.Err() == nil {
		if runErr = s.Run(min(chunk, cfg.Cycles-s.Cycle())); runErr != nil {
			break
		}
		if _, done := s.Termination(); done {
			break
		}
	}
	closeErr := s.Close()
	row := []string{strconv.FormatUint(s.Cycle(), 10), "", "", ""}
	if t, ok := s.Termination(); ok {
		row[1], row[2] = t.Unit, t.Reason
	}
	if e := errors.Join(runErr, closeErr); e != nil {
		row[3] = e.Error()
	}
	names, vals := s.Totals()
	for _, v := range vals {
		row = append(row, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return row, names, nil
}

func writeSweep(w io.Writer, axes []axis, points []point) error {
	cw := csv.NewWriter(w)
	var head []string
	for _, a := range axes {
		head = append(head, a.unit+"."+a.param)
	}
	head = append(head, "cycles", "terminated_by", "reason", "error")
	if len(points) > 0 {
		head = append(head, points[0].names...)
	}
	_ = cw.Write(head)
	for _, p := range points {
		if p.err != nil {
			return fmt.Errorf("sweep: point %s: %w", pointName(p.params[len(p.params)-len(axes):]), p.err)
		}
		row := make([]string, 0, len(head))
		for _, o := range p.params[len(p.params)-len(axes):] {
			row = append(row, o.Value)
		}
		_ = cw.Write(append(row, p.row...))
	}
	cw.Flush()
	return cw.Error()
}
