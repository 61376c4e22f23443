package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const head = "# command: go test -bench X\n# date: 2026-12-02T14:00:00Z\n# host: Test CPU, 2 CPUs\n"

const walBench = head + `goos: linux
pkg: github.com/lanework/lanework/ledger
BenchmarkSubmitWALMaxBatch/max=1-2    1819  783140 ns/op  1.000 tx/group  1000 tx/s
BenchmarkSubmitWALMaxBatch/max=1-2    1929  694666 ns/op  1.000 tx/group  3000 tx/s
BenchmarkSubmitWALMaxBatch/max=1-2    1929  694666 ns/op  1.000 tx/group  2000 tx/s
BenchmarkSubmitWALMaxBatch/max=64-2   9999  30000 ns/op  63.5 tx/group  40000 tx/s
BenchmarkSubmitWALMaxBatch/max=64-2   9999  30000 ns/op  64.5 tx/group  30000 tx/s
BenchmarkSubmitWALMaxBatch/max=1024-2 9999  1600 ns/op  1024 tx/group  600000 tx/s
PASS
ok  	github.com/lanework/lanework/ledger	16.741s
`

const chrononBench = head + `BenchmarkRepresentative64/workers=1-2  100  80000 ns/op
BenchmarkRepresentative64/workers=1-2  100  82000 ns/op
BenchmarkRepresentative64/workers=2-2  100  41000 ns/op
BenchmarkRepresentative64/workers=4-2  100  50000 ns/op
`

const ledgerJSON = head + `{"mode":"in-process","tx_per_second":25000,"offered_tx_per_second":25000,"commit_p50_ns":500000,"commit_p99_ns":2000000,"commit_p999_ns":4000000}
{
  "mode": "in-process", "tx_per_second": 25000, "offered_tx_per_second": 25000,
  "commit_p50_ns": 700000, "commit_p99_ns": 3000000, "commit_p999_ns": 5000000
}
{"tx_per_second":900000,"offered_tx_per_second":1600000,"commit_p50_ns":9000000,"commit_p99_ns":40000000,"commit_p999_ns":90000000}
`

const sideBySide = head + `cell                              go ns     c++ ns   go/c++
frontier/lanes=16/emptymin           9.8       36.3     0.27
frontier/lanes=16/merge4            18.6       31.6     0.59
spsc/local-8B                       3.44          -        -
`

func src(t *testing.T, body string) *source {
	t.Helper()
	s, err := parseSource("test.txt", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseSourceHeader(t *testing.T) {
	s := src(t, walBench)
	if s.meta["command"] != "go test -bench X" || s.meta["host"] != "Test CPU, 2 CPUs" || s.meta["date"] != "2026-12-02T14:00:00Z" {
		t.Fatalf("meta %v", s.meta)
	}
	if !bytes.HasPrefix(s.body, []byte("goos:")) {
		t.Fatalf("body starts %q", s.body[:10])
	}
	_, err := parseSource("bare.txt", []byte("BenchmarkX 1 2 ns/op\n"))
	if err == nil || !strings.Contains(err.Error(), `bare.txt: header has no "command" line`) {
		t.Fatalf("no header: %v", err)
	}
}

func TestParseGoBench(t *testing.T) {
	runs, err := parseGoBench(src(t, walBench))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 6 {
		t.Fatalf("%d runs", len(runs))
	}
	r := runs[3]
	if r.name != "SubmitWALMaxBatch/max=64" || r.procs != 2 || r.metrics["tx/s"] != 40000 || r.metrics["tx/group"] != 63.5 || r.metrics["ns/op"] != 30000 {
		t.Fatalf("run %+v", r)
	}
	for _, bad := range []string{
		"BenchmarkX-2 100 12 ns/op extra\n",
		"BenchmarkX-2 many 12 ns/op\n",
		"BenchmarkX-2 100 twelve ns/op\n",
		"goos: linux\n",
	} {
		if _, err := parseGoBench(src(t, head+bad)); err == nil || !strings.HasPrefix(err.Error(), "test.txt") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestParseLedgerJSON(t *testing.T) {
	reps, err := parseLedgerJSON(src(t, ledgerJSON))
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 3 || reps[1].CommitP50 != 700000 || reps[2].Rate != 1.6e6 {
		t.Fatalf("%+v", reps)
	}
	if _, err := parseLedgerJSON(src(t, head+`{"tx_per_second":1}`)); err == nil || !strings.Contains(err.Error(), "offered_tx_per_second missing") {
		t.Fatalf("saturated run: %v", err)
	}
	if _, err := parseLedgerJSON(src(t, head+`{"tx_per_second":`)); err == nil || !strings.Contains(err.Error(), "report 1") {
		t.Fatalf("cut: %v", err)
	}
}

func TestParseSideBySide(t *testing.T) {
	cells, skipped, err := parseSideBySide(src(t, sideBySide))
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2 || cells[0] != (cell{"frontier/lanes=16/emptymin", 9.8, 36.3}) {
		t.Fatalf("%+v (the spsc row has no C++ number and is skipped)", cells)
	}
	if !slices.Equal(skipped, []string{"spsc/local-8B"}) {
		t.Fatalf("skipped %v", skipped)
	}
	if _, _, err := parseSideBySide(src(t, head+"frontier/x 1 2\n")); err == nil || !strings.Contains(err.Error(), "test.txt:1") {
		t.Fatalf("short row: %v", err)
	}
}

// wellFormed decodes b as XML to the end and returns its text content.
func wellFormed(t *testing.T, b []byte) string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return text.String()
		}
		if err != nil {
			t.Fatalf("not well-formed SVG: %v\n%s", err, b)
		}
		if cd, ok := tok.(xml.CharData); ok {
			text.Write(cd)
		}
	}
}

var polyline = regexp.MustCompile(`<polyline [^>]*points="([^"]*)"`)

// points returns the coordinates of the i-th polyline.
func points(t *testing.T, b []byte, i int) [][2]float64 {
	t.Helper()
	m := polyline.FindAllSubmatch(b, -1)
	if i >= len(m) {
		t.Fatalf("%d polylines, want more than %d", len(m), i)
	}
	var out [][2]float64
	for _, p := range strings.Fields(string(m[i][1])) {
		x, y, _ := strings.Cut(p, ",")
		fx, err1 := strconv.ParseFloat(x, 64)
		fy, err2 := strconv.ParseFloat(y, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("point %q", p)
		}
		out = append(out, [2]float64{fx, fy})
	}
	return out
}

func TestWALBatchChart(t *testing.T) {
	c, err := walBatchChart(src(t, walBench))
	if err != nil {
		t.Fatal(err)
	}
	pts := c.series[0].points
	// medians: cap 1 -> 2000 tx/s, cap 64 -> mean group 64, 35000 tx/s
	if len(pts) != 3 || pts[0] != (point{1, 2000, 1000, 3000, "cap 1"}) || pts[1] != (point{64, 35000, 30000, 40000, "cap 64"}) {
		t.Fatalf("points %+v", pts)
	}
	b := c.svg()
	text := wellFormed(t, b)
	for _, want := range []string{"group-commit size", "command: go test -bench X", "host: Test CPU, 2 CPUs", "cap 1024", "100k"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the chart's text", want)
		}
	}
	// a range bar (three thin lines in the series' colour) through each
	// point with more than one value behind it: cap 1 and cap 64, not 1024
	if n := bytes.Count(b, []byte(`stroke="`+styles[0].colour+`" stroke-width="1.0"`)); n != 6 {
		t.Errorf("%d range-bar lines, want 6", n)
	}
	xy := points(t, b, 0)
	if len(xy) != 3 {
		t.Fatalf("polyline %v", xy)
	}
	for i := 1; i < len(xy); i++ {
		if xy[i][0] <= xy[i-1][0] || xy[i][1] >= xy[i-1][1] {
			t.Errorf("more tx per group and more tx/s go right and up: %v", xy)
		}
	}
}

func TestLatencyChart(t *testing.T) {
	c, err := latencyChart(src(t, ledgerJSON))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.series) != 3 || c.series[0].name != "P50" {
		t.Fatalf("series %+v", c.series)
	}
	p50 := c.series[0].points
	if len(p50) != 2 || p50[0].x != 25000 || p50[0].y != 0.6 || p50[0].lo != 0.5 || p50[0].hi != 0.7 || p50[1].y != 9 {
		t.Fatalf("P50 %+v (ms, median of the two 25k runs)", p50)
	}
	if c.series[2].points[1].label != "achieved 900k" || c.series[2].points[0].label != "" {
		t.Fatalf("labels %+v", c.series[2].points)
	}
	text := wellFormed(t, c.svg())
	for _, want := range []string{"P99.9", "offered load", "achieved 900k"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q", want)
		}
	}
}

func TestSpeedupChart(t *testing.T) {
	c, err := speedupChart(src(t, chrononBench))
	if err != nil {
		t.Fatal(err)
	}
	got, ideal := c.series[0].points, c.series[1].points
	if len(got) != 3 || got[1].y != 81000.0/41000 || got[2].y != 81000.0/50000 || got[0].lo != 81000.0/82000 || got[0].hi != 81000.0/80000 {
		t.Fatalf("speedups %+v", got)
	}
	if ideal[2].y != 2 || c.series[1].name != "ideal on 2 CPUs" {
		t.Fatalf("ideal %+v", c.series[1])
	}
	wellFormed(t, c.svg())
	if _, err := speedupChart(src(t, head+"BenchmarkRepresentative64/workers=2-2 1 5 ns/op\n")); err == nil {
		t.Fatal("no sequential run: want an error")
	}
}

func TestReferenceChart(t *testing.T) {
	c, err := referenceChart(src(t, sideBySide))
	if err != nil {
		t.Fatal(err)
	}
	b := c.svg()
	text := wellFormed(t, b)
	for _, want := range []string{"frontier/lanes=16/emptymin", "lanework 9.8  (0.27x)", "C++ 36.3", "not drawn, one side has no number in this run: spsc/local-8B"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in %q", want, text)
		}
	}
	if n := bytes.Count(b, []byte("<rect x=")); n != 4 {
		t.Errorf("%d bars, want 2 cells x 2 sides", n)
	}
}

func TestNaturalOrder(t *testing.T) {
	names := []string{"frontier/lanes=256/sparse", "frontier/lanes=64/sparse", "frontier/lanes=16/sparse", "frontier/lanes=16/merge4", "spsc/local-8B"}
	slices.SortFunc(names, naturalCompare)
	want := []string{"frontier/lanes=16/merge4", "frontier/lanes=16/sparse", "frontier/lanes=64/sparse", "frontier/lanes=256/sparse", "spsc/local-8B"}
	if !slices.Equal(names, want) {
		t.Fatalf("%v", names)
	}
}

func TestAxis(t *testing.T) {
	a := axis{log: true}
	a.fit([]float64{25000, 1.6e6})
	if a.min != 2e4 || a.max != 2e6 || math.Abs(a.pos(2e5)-0.5) > 1e-9 {
		t.Fatalf("log axis %+v", a)
	}
	if ts := a.ticks(); !slices.Equal(ts, []float64{2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6}) {
		t.Fatalf("ticks %v", ts)
	}
	a = axis{log: true}
	a.fit([]float64{1, 1e6})
	if ts := a.ticks(); len(ts) != 7 || ts[0] != 1 || ts[6] != 1e6 {
		t.Fatalf("six decades: ticks %v", ts)
	}
	l := axis{}
	l.fit([]float64{0.4, 1.97})
	if l.min != 0 || l.max != 2 {
		t.Fatalf("linear axis %+v", l)
	}
	w := axis{log: true, at: []float64{1, 2, 4, 8}}
	w.fit([]float64{1, 8})
	if ts := w.ticks(); len(ts) != 4 || w.pos(2) < 0.333 || w.pos(2) > 0.334 || w.pos(8) != 1 {
		t.Fatalf("explicit ticks %v, pos(2) %g", ts, w.pos(2))
	}
	long := strings.Repeat("word ", 60)
	for _, l := range wrap([]string{long, "short"}) {
		if len(l) > noteWidth {
			t.Errorf("line of %d characters: %q", len(l), l)
		}
	}
	for v, want := range map[float64]string{1.6e6: "1.6M", 25000: "25k", 0.5: "0.5", 2: "2"} {
		if got := number(v); got != want {
			t.Errorf("number(%g) = %q, want %q", v, got, want)
		}
	}
}

// TestRun draws every chart from a data directory, as make plots does.
func TestRun(t *testing.T) {
	data, out := t.TempDir(), filepath.Join(t.TempDir(), "plots")
	for name, body := range map[string]string{"ledger-latency.json": ledgerJSON, "ledger-walbatch.txt": walBench,
		"chronon-workers.txt": chrononBench, "frontier-reference.txt": sideBySide} {
		if err := os.WriteFile(filepath.Join(data, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := run(data, out); err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		b, err := os.ReadFile(filepath.Join(out, c.output))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("<svg ")) {
			t.Errorf("%s: not SVG", c.output)
		}
		wellFormed(t, b)
	}
	if err := os.Remove(filepath.Join(data, "chronon-workers.txt")); err != nil {
		t.Fatal(err)
	}
	if err := run(data, out); err == nil || !strings.Contains(err.Error(), "chronon-workers.txt") {
		t.Fatalf("a missing input: %v", err)
	}
}
