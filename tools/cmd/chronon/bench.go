package main

import (
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/chronon"
	"github.com/lanework/lanework/chronon/examples/cpupipeline"
	"github.com/lanework/lanework/chronon/examples/minimal"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure the minimal model, the CPU pipeline and Build, sequentially, observation off",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "count", Value: 5, EnvVars: []string{"CHRONON_BENCH_COUNT"}, Usage: "runs per benchmark; the median is reported"},
			&cli.Uint64Flag{Name: "minimal-cycles", Value: 20_000_000, EnvVars: []string{"CHRONON_BENCH_MINIMAL_CYCLES"}, Usage: "cycles per minimal run"},
			&cli.Uint64Flag{Name: "pipeline-cycles", Value: 1_000_000, EnvVars: []string{"CHRONON_BENCH_PIPELINE_CYCLES"}, Usage: "cycles per CPU pipeline run"},
			&cli.IntFlag{Name: "build-units", Value: 10_000, EnvVars: []string{"CHRONON_BENCH_BUILD_UNITS"}, Usage: "units (with 4 edges each) per Build run"},
		},
		Action: bench,
	}
}

// sample is one timed run.
type sample struct{ wall, cpu time.Duration }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func timed(f func() error) (sample, error) {
	w, c := time.Now(), cpuTime()
	err := f()
	return sample{time.Since(w), cpuTime() - c}, err
}

func bench(c *cli.Context) error {
	n := c.Int("count")
	if n < 1 {
		return exitcode.Usage("bench: --count must be at least 1")
	}
	w := c.App.Writer
	fmt.Fprintf(w, "%-34s %12s %12s   (median of %d; cpu = process CPU time)\n", "benchmark", "wall", "cpu", n)

	cycles := c.Uint64("minimal-cycles")
	err := runBench(w, n, fmt.Sprintf("minimal, %d cycles", cycles), cycles, func() (*chronon.Simulation, error) {
		s, _, err := minimal.New()
		return s, err
	})
	if err != nil {
		return err
	}
	cycles = c.Uint64("pipeline-cycles")
	err = runBench(w, n, fmt.Sprintf("cpupipeline, %d cycles", cycles), cycles, func() (*chronon.Simulation, error) {
		s, _, _, err := cpupipeline.Load(cpupipeline.WithCommitTarget(0))
		return s, err
	})
	if err != nil {
		return err
	}

	units := c.Int("build-units")
	var runs []sample
	for i := range n {
		s, err := minimal.Random(units, uint64(i+1))
		if err != nil {
			return cli.Exit(err.Error(), 1)
		}
		t, err := timed(s.Build)
		if err != nil {
			return cli.Exit(err.Error(), 1)
		}
		runs = append(runs, t)
	}
	m := median(runs)
	fmt.Fprintf(w, "%-34s %10.1fms %10.1fms\n", fmt.Sprintf("Build, %d units, %d edges", units, 4*units),
		float64(m.wall.Microseconds())/1e3, float64(m.cpu.Microseconds())/1e3)
	return nil
}

func runBench(w interface{ Write([]byte) (int, error) }, n int, name string, cycles uint64, build func() (*chronon.Simulation, error)) error {
	var runs []sample
	for range n {
		s, err := build()
		if err != nil {
			return cli.Exit(err.Error(), 1)
		}
		t, err := timed(func() error { return s.Run(cycles) })
		if err != nil {
			return cli.Exit(err.Error(), 1)
		}
		if s.Cycle() != cycles {
			return cli.Exit(fmt.Sprintf("%s: stopped at cycle %d", name, s.Cycle()), 1)
		}
		runs = append(runs, t)
	}
	m := median(runs)
	fmt.Fprintf(w, "%-34s %7.2f Mc/s %7.2f Mc/s\n", name, rate(cycles, m.wall), rate(cycles, m.cpu))
	return nil
}

// median returns the sample with the median wall time (and, separately,
// the median CPU time).
func median(s []sample) sample {
	walls := make([]time.Duration, len(s))
	cpus := make([]time.Duration, len(s))
	for i, x := range s {
		walls[i], cpus[i] = x.wall, x.cpu
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	return sample{walls[len(s)/2], cpus[len(s)/2]}
}
