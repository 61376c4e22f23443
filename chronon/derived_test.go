package chronon_test

import (
	"bytes"
	"encoding/csv"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// hits counts a hit on two cycles in three, a miss on the third.
type hits struct {
	chronon.Base
	Hit, Miss chronon.Counter
}

func (h *hits) Tick() {
	if h.Cycle()%3 == 2 {
		h.Miss.Inc()
	} else {
		h.Hit.Inc()
	}
}

// TestDerivedCounters: derived columns follow the counters in every
// interval, computed from that interval's increases; Totals computes them
// over the run.
func TestDerivedCounters(t *testing.T) {
	s := chronon.New()
	require.NoError(t, s.Group("l1").Add("d[0]", &hits{}))
	require.NoError(t, s.DeriveCounter("hit_rate", "l1.d[0].Hit / (l1.d[0].Hit + l1.d[0].Miss)"))
	require.NoError(t, s.DeriveCounter("per_cycle", "-(2 * l1.d[0].Miss - 1.5e0) / cycles"))
	require.NoError(t, s.DeriveCounter("zero", "l1.d[0].Miss / (l1.d[0].Hit - l1.d[0].Hit)"))
	require.NoError(t, s.Build())
	var buf bytes.Buffer
	require.NoError(t, s.DumpCounters(&buf, 6))
	require.NoError(t, s.Run(8))
	require.NoError(t, s.Close())
	rows, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, [][]string{
		{"from_cycle", "to_cycle", "l1.d[0].Hit", "l1.d[0].Miss", "hit_rate", "per_cycle", "zero"},
		{"0", "5", "4", "2", "0.6666666666666666", "-0.4166666666666667", ""}, // -(2*2-1.5)/6
		{"6", "7", "2", "0", "1", "0.75", ""},                                 // -(0-1.5)/2
	}, rows)
	names, vals := s.Totals()
	assert.Equal(t, []string{"l1.d[0].Hit", "l1.d[0].Miss", "hit_rate", "per_cycle", "zero"}, names)
	assert.Equal(t, []float64{6, 2}, vals[:2])
	assert.InDelta(t, 0.75, vals[2], 1e-12)
	assert.InDelta(t, -(4-1.5)/8.0, vals[3], 1e-12)
	assert.True(t, math.IsNaN(vals[4]))
}

func TestDerivedCounterErrors(t *testing.T) {
	s := chronon.New()
	require.NoError(t, s.Add("d", &hits{}))
	for _, tc := range []struct{ name, expr, want string }{
		{"ipc", "d.Hits / cycles", `derived counter "ipc": unknown counter "d.Hits" in "d.Hits / cycles"`},
		{"ipc", "d.Hit / ", `derived counter "ipc": "d.Hit / " ends where an operand is expected`},
		{"ipc", "(d.Hit", `missing )`},
		{"ipc", "d.Hit d.Miss", `unexpected "d.Miss" at offset 6`},
		{"ipc", "", `empty expression`},
		{"ipc", "1..2", `bad number "1..2"`},
		{"d.Hit", "1", `derived counter "d.Hit" has the name of a counter`},
		{"a b", "1", `derived counter name "a b"`},
	} {
		err := s.DeriveCounter(tc.name, tc.expr)
		assert.ErrorIs(t, err, chronon.ErrTopology, tc.expr)
		assert.ErrorContains(t, err, tc.want, tc.expr)
	}
	require.NoError(t, s.DeriveCounter("x", "1"))
	assert.ErrorContains(t, s.DeriveCounter("x", "2"), `derived counter "x" defined twice`)
}

// TestDerivedYAML: the derived section, with errors at the expression's
// line naming the counter.
func TestDerivedYAML(t *testing.T) {
	reg, _ := testRegistry()
	chronon.Register(reg, "hits", func(string, struct{}) (chronon.Unit, error) { return &hits{}, nil })
	src := `
units:
  - {name: d, type: hits}
derived:
  - {name: hit_rate, expr: d.Hit / (d.Hit + d.Miss)}
`
	s, cfg, err := chronon.Parse("d.yaml", []byte(src), reg)
	require.NoError(t, err)
	require.NoError(t, s.Run(3))
	names, vals := s.Totals()
	assert.Equal(t, "hit_rate", names[2])
	assert.InDelta(t, 2.0/3, vals[2], 1e-12)
	out, err := cfg.Effective.YAML(cfg)
	require.NoError(t, err)
	assert.Contains(t, string(out), "derived:\n    - name: hit_rate\n      expr: d.Hit / (d.Hit + d.Miss)\n")

	_, _, err = chronon.Parse("d.yaml", []byte(strings.Replace(src, "d.Miss)", "d.Misses)", 1)), reg)
	assert.EqualError(t, err, `d.yaml:5: derived counter "hit_rate": unknown counter "d.Misses" in "d.Hit / (d.Hit + d.Misses)" (counters are named unit.counter; cycles is the interval)`)
	_, _, err = chronon.Parse("d.yaml", []byte(strings.Replace(src, "expr:", "exp:", 1)), reg)
	assert.EqualError(t, err, `d.yaml:5: unknown derived key "exp" (want name, expr)`)
}
