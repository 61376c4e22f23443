package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// source is one benchmark output file as collect.sh writes it: header
// lines "# key: value" naming the command, date and host, then the raw
// output of the run.
type source struct {
	name string            // file name, for errors
	meta map[string]string // command, date, host, go
	body []byte
}

func readSource(path string) (*source, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseSource(path, b)
}

func parseSource(name string, b []byte) (*source, error) {
	s := &source{name: name, meta: map[string]string{}}
	for len(b) > 0 && b[0] == '#' {
		line, rest, _ := bytes.Cut(b, []byte("\n"))
		k, v, ok := strings.Cut(strings.TrimPrefix(string(line), "#"), ":")
		if ok {
			s.meta[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		b = rest
	}
	for _, k := range []string{"command", "date", "host"} {
		if s.meta[k] == "" {
			return nil, fmt.Errorf("%s: header has no %q line (want \"# %s: ...\")", name, k, k)
		}
	}
	s.body = b
	return s, nil
}

// benchRun is one line of `go test -bench` output.
type benchRun struct {
	name    string // without the "Benchmark" prefix and the -GOMAXPROCS suffix
	procs   int    // GOMAXPROCS (the suffix; 1 when absent)
	metrics map[string]float64
}

// parseGoBench reads the result lines of `go test -bench` output; other
// lines (goos:, pkg:, PASS, ok ...) are skipped.
func parseGoBench(s *source) ([]benchRun, error) {
	var runs []benchRun
	sc := bufio.NewScanner(bytes.NewReader(s.body))
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if len(f) < 4 || len(f)%2 != 0 {
			return nil, fmt.Errorf("%s:%d: not a benchmark result (want name, iterations, then value-unit pairs): %q", s.name, n, sc.Text())
		}
		r := benchRun{name: strings.TrimPrefix(f[0], "Benchmark"), procs: 1, metrics: map[string]float64{}}
		if i := strings.LastIndexByte(r.name, '-'); i > 0 {
			if p, err := strconv.Atoi(r.name[i+1:]); err == nil {
				r.name, r.procs = r.name[:i], p
			}
		}
		if _, err := strconv.ParseUint(f[1], 10, 64); err != nil {
			return nil, fmt.Errorf("%s:%d: iterations %q: %w", s.name, n, f[1], err)
		}
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: value of %s %q: %w", s.name, n, f[i+1], f[i], err)
			}
			r.metrics[f[i+1]] = v
		}
		runs = append(runs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: no benchmark results", s.name)
	}
	return runs, nil
}

// benchReport holds the fields of `ledger bench --json` the charts use.
type benchReport struct {
	Rate       float64 `json:"offered_tx_per_second"`
	Throughput float64 `json:"tx_per_second"`
	CommitP50  float64 `json:"commit_p50_ns"`
	CommitP99  float64 `json:"commit_p99_ns"`
	CommitP999 float64 `json:"commit_p999_ns"`
}

// parseLedgerJSON reads a stream of `ledger bench --json` reports.
func parseLedgerJSON(s *source) ([]benchReport, error) {
	var out []benchReport
	dec := json.NewDecoder(bytes.NewReader(s.body))
	for {
		var r benchReport
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: report %d: %w", s.name, len(out)+1, err)
		}
		if r.Rate <= 0 {
			return nil, fmt.Errorf("%s: report %d: offered_tx_per_second missing (a saturated run cannot be placed on the load axis)", s.name, len(out)+1)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no reports", s.name)
	}
	return out, nil
}

// cell is one row of side-by-side.sh: medians of each side in ns.
type cell struct {
	name  string
	goNs  float64
	cppNs float64
}

// parseSideBySide reads the table side-by-side.sh prints: a header line
// "cell go ns c++ ns go/c++", then "name go c++ ratio" rows ("-" or an
// empty column where a side has no number: such rows are skipped, there
// is nothing to compare).
func parseSideBySide(s *source) (cells []cell, skipped []string, err error) {
	var out []cell
	sc := bufio.NewScanner(bytes.NewReader(s.body))
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] == "cell" {
			continue
		}
		if f[len(f)-1] == "-" {
			skipped = append(skipped, f[0])
			continue
		}
		if len(f) != 4 {
			return nil, nil, fmt.Errorf("%s:%d: want cell, go ns, c++ ns, ratio: %q", s.name, n, sc.Text())
		}
		c := cell{name: f[0]}
		var err1, err2 error
		c.goNs, err1 = strconv.ParseFloat(f[1], 64)
		c.cppNs, err2 = strconv.ParseFloat(f[2], 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %s: %w", s.name, n, f[0], err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%s: no cells", s.name)
	}
	return out, skipped, sc.Err()
}
