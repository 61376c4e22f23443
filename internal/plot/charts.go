package main

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// median of vs (vs is reordered).
func median(vs []float64) float64 {
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

// spread is the median of a set of runs and its range.
type spread struct{ med, lo, hi float64 }

func spreadOf(vs []float64) spread {
	m := median(vs) // sorts
	return spread{m, vs[0], vs[len(vs)-1]}
}

// provenance are a chart's footnotes: where its numbers came from.
func provenance(s *source, extra ...string) []string {
	return append([]string{
		"command: " + s.meta["command"],
		"date: " + s.meta["date"] + "   host: " + s.meta["host"],
	}, extra...)
}

// subValue returns the integer after key= in a sub-benchmark name
// ("SubmitWALMaxBatch/max=64" -> 64).
func subValue(name, key string) (int, bool) {
	_, v, ok := strings.Cut(name, "/"+key+"=")
	if !ok {
		return 0, false
	}
	v, _, _ = strings.Cut(v, "/")
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// mediansBy groups runs by the integer sub-benchmark parameter key and
// returns, in increasing order of it, the spread of each metric.
func mediansBy(s *source, runs []benchRun, key string, metrics ...string) ([]int, [][]spread, error) {
	vals := map[int][][]float64{}
	for _, r := range runs {
		k, ok := subValue(r.name, key)
		if !ok {
			continue
		}
		if vals[k] == nil {
			vals[k] = make([][]float64, len(metrics))
		}
		for i, m := range metrics {
			v, ok := r.metrics[m]
			if !ok {
				return nil, nil, fmt.Errorf("%s: %s has no %q metric", s.name, r.name, m)
			}
			vals[k][i] = append(vals[k][i], v)
		}
	}
	if len(vals) == 0 {
		return nil, nil, fmt.Errorf("%s: no sub-benchmark with %s=N", s.name, key)
	}
	var keys []int
	for k := range vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][]spread, len(keys))
	for i, k := range keys {
		for _, vs := range vals[k] {
			out[i] = append(out[i], spreadOf(vs))
		}
	}
	return keys, out, nil
}

// walBatchChart: durable throughput against the mean group commit, one
// point per WALMaxBatch cap (BenchmarkSubmitWALMaxBatch).
func walBatchChart(s *source) (*lineChart, error) {
	runs, err := parseGoBench(s)
	if err != nil {
		return nil, err
	}
	caps, med, err := mediansBy(s, runs, "max", "tx/group", "tx/s")
	if err != nil {
		return nil, err
	}
	sr := series{name: "durable tx/s"}
	for i, c := range caps {
		y := med[i][1]
		sr.points = append(sr.points, point{x: med[i][0].med, y: y.med, lo: y.lo, hi: y.hi, label: "cap " + strconv.Itoa(c)})
	}
	return &lineChart{
		title:  "Ledger: durable throughput against group-commit size",
		x:      axis{label: "transactions per WAL group commit (mean; WALMaxBatch caps it)", log: true},
		y:      axis{label: "durable transactions per second", log: true},
		series: []series{sr},
		notes:  provenance(s, fmt.Sprintf("one submitter at saturation, snapshots on; median of %d runs per cap, bars from the slowest to the fastest", len(runs)/len(caps))),
	}, nil
}

// latencyChart: submit -> Committed latency quantiles against offered load
// (`ledger bench --rate R --json`, medians over the rounds at each rate).
func latencyChart(s *source) (*lineChart, error) {
	reps, err := parseLedgerJSON(s)
	if err != nil {
		return nil, err
	}
	byRate := map[float64][][4]float64{}
	for _, r := range reps {
		byRate[r.Rate] = append(byRate[r.Rate], [4]float64{r.CommitP50, r.CommitP99, r.CommitP999, r.Throughput})
	}
	var rates []float64
	for r := range byRate {
		rates = append(rates, r)
	}
	slices.Sort(rates)
	names := []string{"P50", "P99", "P99.9"}
	ss := make([]series, len(names))
	for i := range names {
		ss[i].name = names[i]
	}
	for _, r := range rates {
		var sp [4]spread
		for q := range sp {
			var vs []float64
			for _, x := range byRate[r] {
				vs = append(vs, x[q])
			}
			sp[q] = spreadOf(vs)
		}
		for q := range ss {
			p := point{x: r, y: sp[q].med / 1e6, lo: sp[q].lo / 1e6, hi: sp[q].hi / 1e6}
			if q == len(ss)-1 && sp[3].med < 0.95*r {
				p.label = "achieved " + number(sp[3].med)
			}
			ss[q].points = append(ss[q].points, p)
		}
	}
	return &lineChart{
		title:  "Ledger: submit → Committed latency against offered load",
		x:      axis{label: "offered load (transactions per second, two submitters)", log: true},
		y:      axis{label: "latency (ms)", log: true},
		series: ss,
		notes:  provenance(s, fmt.Sprintf("median of %d rounds per rate, bars from the lowest to the highest; \"achieved\": durable tx/s where below 95%% of the offered load", len(reps)/len(rates))),
	}, nil
}

// speedupChart: chronon's representative 64-unit workload, sequential
// time over parallel time per worker count (BenchmarkRepresentative64).
func speedupChart(s *source) (*lineChart, error) {
	runs, err := parseGoBench(s)
	if err != nil {
		return nil, err
	}
	workers, med, err := mediansBy(s, runs, "workers", "ns/op")
	if err != nil {
		return nil, err
	}
	if workers[0] != 1 {
		return nil, fmt.Errorf("%s: no workers=1 run to compare with", s.name)
	}
	procs := runs[0].procs
	var at []float64
	for _, w := range workers {
		at = append(at, float64(w))
	}
	got := series{name: "measured"}
	ideal := series{name: fmt.Sprintf("ideal on %d CPUs", procs), reference: true}
	seq := med[0][0].med
	for i, w := range workers {
		t := med[i][0]
		sp := seq / t.med
		got.points = append(got.points, point{x: float64(w), y: sp, lo: seq / t.hi, hi: seq / t.lo, label: fmt.Sprintf("%.2fx", sp)})
		ideal.points = append(ideal.points, point{x: float64(w), y: float64(min(w, procs))})
	}
	return &lineChart{
		title:  "Chronon: parallel speedup, representative 64-unit workload",
		x:      axis{label: "workers", log: true, at: at},
		y:      axis{label: "speedup over sequential (median ns per cycle)"},
		series: []series{got, ideal},
		notes:  provenance(s, fmt.Sprintf("GOMAXPROCS %d; workers=1 is the sequential engine; bars: the median sequential time over each run's", procs)),
	}, nil
}

// referenceChart: frontier and ringbuf cells against the C++ reference,
// medians of the same alternating run (side-by-side.sh).
func referenceChart(s *source) (*barChart, error) {
	cells, skipped, err := parseSideBySide(s)
	if err != nil {
		return nil, err
	}
	c := &barChart{
		title:      "lanework against the C++ reference, cell by cell (lower is faster)",
		valueLabel: "ns per operation (median of the alternating rounds)",
		names:      [2]string{"lanework", "C++"},
		notes:      provenance(s, "ratio: lanework / C++, below 1 is faster; both sides measured in the same run, alternating"),
	}
	if len(skipped) > 0 {
		c.notes = append(c.notes, "not drawn, one side has no number in this run: "+strings.Join(skipped, ", "))
	}
	slices.SortStableFunc(cells, func(a, b cell) int { return naturalCompare(a.name, b.name) })
	for _, x := range cells {
		c.rows = append(c.rows, barRow{name: x.name, values: [2]float64{x.goNs, x.cppNs}})
	}
	return c, nil
}

// naturalCompare orders names with their digit runs compared as numbers,
// so lanes=16 < lanes=64 < lanes=256.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, _ := strconv.Atoi(a[:da])
			nb, _ := strconv.Atoi(b[:db])
			if na != nb {
				return cmp.Compare(na, nb)
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
