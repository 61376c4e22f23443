package chronon_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

const overrideYAML = `
units:
  - {name: g, type: gen, params: {count: 2}}
  - group: core0
    units:
      - {name: "g[1]", type: gen}
      - {name: sink, type: collect}
    connections:
      - {from: "g[1].out", to: sink.in}
connections:
  - {from: g.out, to: core0.sink.in}
`

func override(t *testing.T, s ...string) []chronon.LoadOption {
	t.Helper()
	var os []chronon.ParamOverride
	for _, x := range s {
		o, err := chronon.ParseParamOverride(x)
		require.NoError(t, err)
		os = append(os, o)
	}
	return []chronon.LoadOption{chronon.WithParams(os...)}
}

// TestParamOverride: -p replaces a parameter, adds one the topology left
// out, reaches units in groups, and the last override of a parameter wins.
func TestParamOverride(t *testing.T) {
	reg, sinks := testRegistry()
	s, cfg, err := chronon.Parse("o.yaml", []byte(overrideYAML), reg,
		override(t, "g.count=3", "core0.g[1].count=1", "core0.g[1].step=100", "g.step=5", "g.count=4")...)
	require.NoError(t, err)
	require.NoError(t, s.Run(10))
	assert.ElementsMatch(t, []int{0, 5, 10, 15, 0}, sinks["core0.sink"].got)
	out, err := cfg.Effective.YAML(cfg)
	require.NoError(t, err)
	assert.Contains(t, string(out), "params: {count: 4, step: 5}")
	assert.Contains(t, string(out), "params: {count: 1, step: 100}")
}

func TestParamOverrideErrors(t *testing.T) {
	reg, _ := testRegistry()
	for _, tc := range []struct{ p, want string }{
		{"nosuch.count=1", `-p nosuch.count=1: no unit "nosuch" (units: core0.g[1], core0.sink, g)`},
		{"g.cnt=1", `-p g.cnt=1: unit "g" has no parameter "cnt" (want one of count, step)`},
		{"core0.sink.x=1", `-p core0.sink.x=1: unit "core0.sink" has no parameter "x" (want one of none)`},
		{"g.count=many", `-p g.count=many: value "many" does not fit count (int)`},
	} {
		_, _, err := chronon.Parse("o.yaml", []byte(overrideYAML), reg, override(t, tc.p)...)
		require.Error(t, err, tc.p)
		assert.Contains(t, err.Error(), tc.want)
		assert.ErrorIs(t, err, chronon.ErrTopology)
		var oe *chronon.OverrideError
		require.True(t, errors.As(err, &oe), tc.p)
		assert.Equal(t, tc.p, oe.Override.String())
	}
	scalar := strings.Replace(overrideYAML, "params: {count: 2}", "params: 2", 1)
	_, _, err := chronon.Parse("o.yaml", []byte(scalar), reg, override(t, "g.count=1")...)
	assert.EqualError(t, err, `o.yaml:3: unit "g": params must be a mapping`, "an override does not hide bad params")
	for _, bad := range []string{"count=1", "g.=1", ".count=1", "g.count"} {
		_, err := chronon.ParseParamOverride(bad)
		assert.ErrorIs(t, err, chronon.ErrTopology, bad)
	}
}

const busYAML = `
units:
  - {name: "g[0]", type: gen, params: {count: 2, step: 1}}
  - {name: "g[1]", type: gen, params: {count: 2, step: 10}}
  - {name: "g[2]", type: gen, params: {count: 2, step: 100}}
  - {name: a, type: collect}
  - {name: b, type: collect}
connections:
  - bus: {from: ["g[0].out", "g[1].out", "g[2].out"], to: [a.in, b.in], delay: 2, capacity: 4, rate: 1}
`

// TestBus: a bus of 3 senders and 2 receivers is 6 connections, each
// receiver merging the senders in sender order; the effective topology
// lists them and parses back into the same simulation.
func TestBus(t *testing.T) {
	reg, sinks := testRegistry()
	s, cfg, err := chronon.Parse("b.yaml", []byte(busYAML), reg)
	require.NoError(t, err)
	assert.Equal(t, 6, s.Connections())
	require.NoError(t, s.Run(10))
	want := []int{0, 0, 0, 1, 10, 100}
	assert.Equal(t, want, sinks["a"].got, "fan-in in (arrive, sender) order")
	assert.Equal(t, want, sinks["b"].got)
	require.Len(t, cfg.Effective.Connections, 6)
	assert.Equal(t, chronon.EffectiveConnection{From: "g[1].out", To: "b.in", Delay: 2, Capacity: 4, Rate: 1}, cfg.Effective.Connections[3])

	out, err := cfg.Effective.YAML(cfg)
	require.NoError(t, err)
	reg2, sinks2 := testRegistry()
	s2, cfg2, err := chronon.Parse("effective.yaml", out, reg2)
	require.NoError(t, err, string(out))
	require.NoError(t, s2.Run(10))
	assert.Equal(t, want, sinks2["b"].got)
	again, err := cfg2.Effective.YAML(cfg2)
	require.NoError(t, err)
	assert.Equal(t, string(out), string(again), "the effective topology is a fixed point")

	for _, tc := range []struct{ from, to, want string }{
		{`bus: {from: "g[0].out", to: a.in, delay: 2}`, "", ""},
		{`bus: {from: ["g[0].out"], to: [a.in], speed: 2}`, "", `unknown bus key "speed"`},
		{`bus: [a, b]`, "", "a bus must be a mapping"},
		{`{from: ["g[0].out", "g[1].out"], to: a.in}`, "", "from must be one port (a list of senders is a bus)"},
		{`bus: {from: ["g[0].out", "nope.out"], to: [a.in]}`, "", `unknown unit "nope"`},
	} {
		src := strings.Replace(busYAML, `bus: {from: ["g[0].out", "g[1].out", "g[2].out"], to: [a.in, b.in], delay: 2, capacity: 4, rate: 1}`, tc.from, 1)
		_, _, err := chronon.Parse("b.yaml", []byte(src), reg)
		if tc.want == "" {
			assert.NoError(t, err, tc.from)
			continue
		}
		assert.ErrorContains(t, err, "b.yaml:9: "+tc.want, tc.from)
	}
}

// TestBusDeterminism: what the bus's receivers get is the same
// sequentially and with 1 to 8 workers.
func TestBusDeterminism(t *testing.T) {
	run := func(workers int) map[string][]int {
		reg, sinks := testRegistry()
		s, _, err := chronon.Parse("b.yaml", []byte(strings.Replace(busYAML, "count: 2", "count: 500", -1)), reg)
		require.NoError(t, err)
		s.SetParallelThreshold(0)
		require.NoError(t, s.SetWorkers(workers))
		if workers > 1 {
			used, _ := s.Engine()
			require.Greater(t, used, 1)
		}
		require.NoError(t, s.Run(3000))
		out := map[string][]int{}
		for n, k := range sinks {
			out[n] = k.got
		}
		return out
	}
	want := run(1)
	require.Len(t, want["a"], 1500)
	for _, w := range []int{1, 2, 3, 4, 8} {
		require.Equal(t, want, run(w), "%d workers", w)
	}
}
