package chronon_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// grouped is a unit that counts, traces and may panic.
type grouped struct {
	chronon.Base
	In    chronon.InPort[int]
	Out   chronon.OutPort[int]
	Ticks chronon.Counter
	panAt uint64
}

func (g *grouped) Tick() {
	g.Ticks.Inc()
	g.Event("tick")
	if g.panAt != 0 && g.Cycle() == g.panAt {
		panic("boom")
	}
	if v, ok := g.In.TryReceive(); ok {
		g.Out.Send(v + 1)
	} else {
		g.Out.Send(0)
	}
}

// TestGroupNames: a unit in nested groups is named by its path in Units,
// port names, counter columns, trace threads and errors.
func TestGroupNames(t *testing.T) {
	s := chronon.New()
	core := s.Group("core0")
	a, b := &grouped{}, &grouped{panAt: 7}
	require.NoError(t, core.Group("lsu").Add("alu[2]", a))
	require.NoError(t, core.Add("alu[3]", b))
	assert.Equal(t, "core0.lsu", core.Group("lsu").Name())
	require.NoError(t, chronon.Connect(&a.Out, &b.In))
	require.NoError(t, chronon.Connect(&b.Out, &a.In))
	require.NoError(t, s.Build())
	assert.Equal(t, []string{"core0.lsu.alu[2]", "core0.alu[3]"}, s.Units())
	assert.Equal(t, "core0.lsu.alu[2].Out", a.Out.Name())
	assert.Equal(t, "core0.alu[3]", b.Name())
	_, ok := s.Unit("core0.alu[3]")
	assert.True(t, ok)

	var ctrs, trace bytes.Buffer
	require.NoError(t, s.DumpCounters(&ctrs, 5)) // a row at cycle 5, before the panic
	s.TraceTo(&trace)
	err := s.Run(20)
	var ue *chronon.UnitError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "core0.alu[3]", ue.Unit)
	assert.Contains(t, err.Error(), "core0.alu[3]")
	require.NoError(t, s.Close())
	assert.True(t, strings.HasPrefix(ctrs.String(), "from_cycle,to_cycle,core0.lsu.alu[2].Ticks,core0.alu[3].Ticks\n"), ctrs.String())
	assert.Contains(t, trace.String(), `"args":{"name":"core0.lsu.alu[2]"}`)

	assert.ErrorIs(t, s.Group("x").Add("a b", &grouped{}), chronon.ErrBuilt)
	s2 := chronon.New()
	assert.ErrorIs(t, s2.Group("x").Add("", &grouped{}), chronon.ErrTopology)
	assert.ErrorIs(t, s2.Group("x y").Add("a", &grouped{}), chronon.ErrTopology)
}

const groupYAML = `
units:
  - {name: src, type: gen, params: {count: 3}}
  - group: core0
    units:
      - {name: "alu[0]", type: collect}
      - group: lsu
        units:
          - {name: gen, type: gen, params: {count: 2, step: 10}}
          - {name: sink, type: collect}
        connections:
          - {from: gen.out, to: sink.in}
    connections:
      - {from: lsu.gen.out, to: "alu[0].in"}
      - {from: src.out, to: "alu[0].in", delay: 2}
connections:
  - {from: src.out, to: core0.lsu.sink.in}
`

// TestGroupYAML: nested groups name their units by path; a group's
// connections name its units relative to it, or by full name.
func TestGroupYAML(t *testing.T) {
	reg, sinks := testRegistry()
	s, _, err := chronon.Parse("g.yaml", []byte(groupYAML), reg)
	require.NoError(t, err)
	assert.Equal(t, []string{"src", "core0.alu[0]", "core0.lsu.gen", "core0.lsu.sink"}, s.Units())
	require.NoError(t, s.Run(10))
	assert.ElementsMatch(t, []int{0, 1, 2, 0, 10}, sinks["core0.alu[0]"].got)
	assert.ElementsMatch(t, []int{0, 1, 2, 0, 10}, sinks["core0.lsu.sink"].got)

	for _, tc := range []struct{ src, want string }{
		{strings.Replace(groupYAML, "to: sink.in", "to: nosuch.in", 1),
			`g.yaml:12: unknown unit "nosuch" in "nosuch.in" (neither "core0.lsu.nosuch" in group core0.lsu nor a full name)`},
		{strings.Replace(groupYAML, "to: sink.in", "to: sink.nope", 1),
			`g.yaml:12: unit "core0.lsu.sink" has no input port "nope" (inputs: in)`},
		{strings.Replace(groupYAML, "group: lsu", "group: lsu\n        prefix: x", 1),
			`g.yaml:8: unknown group key "prefix" (want group, units, connections)`},
		{strings.Replace(groupYAML, "name: sink", "name: gen", 1),
			`duplicate unit name "core0.lsu.gen"`},
	} {
		_, _, err := chronon.Parse("g.yaml", []byte(tc.src), reg)
		require.Error(t, err)
		var te *chronon.TopologyError
		require.True(t, errors.As(err, &te))
		assert.Contains(t, err.Error(), tc.want)
	}
}

// TestGroupDeterminism: a grouped topology with transactions across
// groups, sequentially and with 1 to 8 workers.
func TestGroupDeterminism(t *testing.T) {
	sc := scenario{
		build: func(t *testing.T) *chronon.Simulation {
			s := chronon.New()
			var ds [2]*dispatcher
			var ks [4]*taker
			for i := range ds {
				ds[i] = &dispatcher{width: func(c uint64) int { return int(mix(c+uint64(i)) % 3) }}
				require.NoError(t, s.Group("front").Add(fmtName("d", i), ds[i]))
			}
			for i := range ks {
				ks[i] = &taker{take: func(c uint64) int { return int(mix(c^uint64(i*9)) % 2) }}
				require.NoError(t, s.Group(fmtName("core", i/2)).Group("q").Add(fmtName("k", i), ks[i]))
			}
			for i, d := range ds {
				require.NoError(t, chronon.Connect(&d.IQ, &ks[2*i].In, chronon.Capacity(3), chronon.Rate(2)))
				require.NoError(t, chronon.Connect(&d.ROB, &ks[2*i+1].In, chronon.Capacity(2), chronon.Delay(2)))
			}
			require.NoError(t, s.Build())
			return s
		},
		run: func(s *chronon.Simulation) error { return s.Run(2000) },
	}
	want, used := checkDeterminism(t, sc, 2)
	assert.Greater(t, used, 1)
	assert.Contains(t, want.events, "core1.q.k3")
}
