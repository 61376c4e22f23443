package chronon_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

type genParams struct {
	Count int `yaml:"count"`
	Step  int
}

type gen struct {
	chronon.Base
	Out  chronon.OutPort[int] `chronon:"out"`
	Wide chronon.OutPort[string]
	p    genParams
	n    int
}

func (g *gen) Tick() {
	if g.n < g.p.Count && g.Out.Send(g.n*max(g.p.Step, 1)) {
		g.n++
	}
}

type collect struct {
	chronon.Base
	In  chronon.InPort[int] `chronon:"in"`
	got []int
}

func (c *collect) Tick() {
	for {
		v, ok := c.In.TryReceive()
		if !ok {
			return
		}
		c.got = append(c.got, v)
	}
}

func testRegistry() (*chronon.Registry, map[string]*collect) {
	sinks := make(map[string]*collect)
	r := chronon.NewRegistry()
	chronon.Register(r, "gen", func(name string, p genParams) (chronon.Unit, error) {
		if p.Count < 0 {
			return nil, errors.New("count must not be negative")
		}
		return &gen{p: p}, nil
	})
	chronon.Register(r, "collect", func(name string, _ struct{}) (chronon.Unit, error) {
		c := &collect{}
		sinks[name] = c
		return c, nil
	})
	return r, sinks
}

func TestParseTopology(t *testing.T) {
	src := `
simulation:
  cycles: 20
  workers: 2
  max_lookahead: 8
units:
  - name: g
    type: gen
    params: {count: 3, step: 10}
  - {name: a, type: collect}
  - {name: b, type: collect}
connections:
  - from: g.out
    to: [a.in, b.in]
    delay: 2
    capacity: 4
`
	reg, sinks := testRegistry()
	s, cfg, err := chronon.Parse("t.yaml", []byte(src), reg)
	require.NoError(t, err)
	require.NotNil(t, cfg.Effective)
	assert.Len(t, cfg.Effective.Units, 3)
	cfg.Effective = nil
	assert.Equal(t, chronon.Config{Cycles: 20, Workers: 2, MaxLookahead: 8}, cfg)
	assert.Equal(t, []string{"g", "a", "b"}, s.Units())
	require.NoError(t, s.Run(cfg.Cycles))
	assert.Equal(t, []int{0, 10, 20}, sinks["a"].got)
	assert.Equal(t, []int{0, 10, 20}, sinks["b"].got)
}

func TestParseTopologyErrors(t *testing.T) {
	const units = "units:\n  - {name: g, type: gen}\n  - {name: a, type: collect}\n"
	for _, tc := range []struct {
		name, src, want string
	}{
		{"syntax", "units: [\n", "t.yaml:1: did not find expected node content"},
		{"unknown section", "unit: []\n", `t.yaml:1: unknown section "unit"`},
		{"no units", "simulation: {cycles: 3}\n", "t.yaml: no units section"},
		{"bad cycles", "simulation:\n  cycles: many\n" + units, "t.yaml:2: cannot unmarshal !!str `many` into uint64"},
		{"bad workers", "simulation:\n  workers: 0\n" + units, "t.yaml:2: workers must be at least 1, not 0"},
		{"unknown type", "units:\n  - name: x\n    type: nope\n", `t.yaml:3: unknown unit type "nope" (registered: collect, gen)`},
		{"missing type", "units:\n  - name: x\n", `t.yaml:2: unit "x" has no type`},
		{"unknown param", "units:\n  - name: g\n    type: gen\n    params:\n      count: 1\n      colour: red\n",
			`t.yaml:6: unknown parameter "colour" (want one of count, step)`},
		{"param type", "units:\n  - name: g\n    type: gen\n    params:\n      count: lots\n", "t.yaml:5: cannot unmarshal !!str `lots` into int"},
		{"factory error", "units:\n  - name: g\n    type: gen\n    params: {count: -1}\n", `t.yaml:2: unit "g": count must not be negative`},
		{"duplicate unit", "units:\n  - {name: g, type: gen}\n  - {name: g, type: gen}\n", `t.yaml:3: invalid topology: duplicate unit name "g"`},
		{"unknown unit", units + "connections:\n  - {from: x.out, to: a.in}\n", `t.yaml:5: unknown unit "x" in "x.out"`},
		{"unknown port", units + "connections:\n  - {from: g.outt, to: a.in}\n", `t.yaml:5: unit "g" has no output port "outt" (outputs: Wide, out)`},
		{"unknown input", units + "connections:\n  - from: g.out\n    to: [a.in, a.inn]\n", `t.yaml:6: unit "a" has no input port "inn" (inputs: in)`},
		{"type mismatch", units + "connections:\n  - {from: g.Wide, to: a.in}\n", "t.yaml:5: invalid topology: cannot connect g.Wide (string) to a.in (int): message types differ"},
		{"negative delay", units + "connections:\n  - {from: g.out, to: a.in, delay: -1}\n", "t.yaml:5: invalid topology: delay -1 is negative"},
		{"long delay", units + "connections:\n  - {from: g.out, to: a.in, delay: 16777217}\n", "t.yaml:5: invalid topology: delay 16777217 exceeds 16777216"},
		{"high rate", units + "connections:\n  - {from: g.out, to: a.in, rate: 16777217}\n", "t.yaml:5: invalid topology: rate 16777217 exceeds 16777216 (use 0 for unlimited)"},
		{"bad rate", units + "connections:\n  - {from: g.out, to: a.in, rate: fast}\n", "t.yaml:5: cannot unmarshal !!str `fast` into int"},
		{"unknown key", units + "connections:\n  - {from: g.out, to: a.in, latency: 3}\n", `t.yaml:5: unknown connection key "latency"`},
		{"missing to", units + "connections:\n  - {from: g.out}\n", "t.yaml:5: connection needs from and to"},
		{"bad port syntax", units + "connections:\n  - {from: g, to: a.in}\n", `t.yaml:5: port "g" is not written unit.port`},
	} {
		reg, _ := testRegistry()
		_, _, err := chronon.Parse("t.yaml", []byte(tc.src), reg)
		require.Error(t, err, tc.name)
		assert.ErrorIs(t, err, chronon.ErrTopology, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
}

func TestParseZeroDelayCycleNamesLines(t *testing.T) {
	src := `units:
  - {name: a, type: relay}
  - {name: b, type: relay}
connections:
  - {from: a.Out, to: b.In, delay: 0}
  - {from: b.Out, to: a.In, delay: 0}
`
	reg := chronon.NewRegistry()
	chronon.Register(reg, "relay", func(string, struct{}) (chronon.Unit, error) { return &relay{}, nil })
	_, _, err := chronon.Parse("loop.yaml", []byte(src), reg)
	require.ErrorIs(t, err, chronon.ErrZeroDelayCycle)
	assert.Contains(t, err.Error(), "a.Out -> b.In (delay 0, loop.yaml:5), b.Out -> a.In (delay 0, loop.yaml:6)")
}

func TestLoadMissingFile(t *testing.T) {
	reg, _ := testRegistry()
	_, _, err := chronon.Load("/nonexistent/t.yaml", reg)
	require.Error(t, err)
}
