// Command plot draws the charts of docs/benchmarks.md as SVG from the
// benchmark outputs that collect.sh saved under docs/bench-data:
//
//	cd internal/plot && GOWORK=off go run . -data ../../docs/bench-data -out ../../docs/plots
//
// (`make plots`). Each chart carries, under it, the command, date and
// host of the run it shows.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// charts maps each input file to the chart drawn from it.
var charts = []struct {
	input, output string
	draw          func(*source) ([]byte, error)
}{
	{"ledger-latency.json", "ledger-latency.svg", lineOf(latencyChart)},
	{"ledger-walbatch.txt", "ledger-walbatch.svg", lineOf(walBatchChart)},
	{"chronon-workers.txt", "chronon-speedup.svg", lineOf(speedupChart)},
	{"frontier-reference.txt", "frontier-reference.svg", func(s *source) ([]byte, error) {
		c, err := referenceChart(s)
		if err != nil {
			return nil, err
		}
		return c.svg(), nil
	}},
}

func lineOf(f func(*source) (*lineChart, error)) func(*source) ([]byte, error) {
	return func(s *source) ([]byte, error) {
		c, err := f(s)
		if err != nil {
			return nil, err
		}
		return c.svg(), nil
	}
}

func run(data, out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, c := range charts {
		s, err := readSource(filepath.Join(data, c.input))
		if err != nil {
			return err
		}
		b, err := c.draw(s)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, c.output), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	data := flag.String("data", "docs/bench-data", "directory of the benchmark outputs")
	out := flag.String("out", "docs/plots", "directory for the SVG charts")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "plot: unexpected arguments; usage: plot [-data DIR] [-out DIR]")
		os.Exit(2)
	}
	if err := run(*data, *out); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}
