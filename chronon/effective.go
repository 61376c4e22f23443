package chronon

import "go.yaml.in/yaml/v3"

// Effective is a loaded topology as built: every unit by its full name
// (groups expanded) with its parameters after overrides, every connection
// (buses and fanouts expanded) with its delay, capacity and rate. Its YAML
// parses back into the same simulation.
type Effective struct {
	Units       []EffectiveUnit
	Connections []EffectiveConnection
	Derived     []DerivedCounter
}

// EffectiveUnit is one unit of an Effective topology.
type EffectiveUnit struct {
	Name, Type string
	Params     *yaml.Node // nil: none
	Clock      Clock      // the zero Clock: every cycle
}

// EffectiveConnection is one connection of an Effective topology.
type EffectiveConnection struct {
	From, To              string
	Delay, Capacity, Rate int
}

// YAML returns the effective topology as a topology file, with sim as its
// simulation section.
func (e *Effective) YAML(sim Config) ([]byte, error) {
	type unit struct {
		Name   string     `yaml:"name"`
		Type   string     `yaml:"type"`
		Params *yaml.Node `yaml:"params,omitempty"`
		Clock  *Clock     `yaml:"clock,omitempty,flow"`
	}
	type conn struct {
		From     string `yaml:"from"`
		To       string `yaml:"to"`
		Delay    int    `yaml:"delay"`
		Capacity int    `yaml:"capacity"`
		Rate     int    `yaml:"rate"`
	}
	type derived struct {
		Name string `yaml:"name"`
		Expr string `yaml:"expr"`
	}
	type simulation struct {
		Cycles       uint64 `yaml:"cycles"`
		Workers      int    `yaml:"workers"`
		MaxLookahead uint64 `yaml:"max_lookahead,omitempty"` // part of the model: stop latency (WithMaxLookahead)
	}
	doc := struct {
		Simulation  simulation `yaml:"simulation"`
		Units       []unit     `yaml:"units"`
		Connections []conn     `yaml:"connections,omitempty"`
		Derived     []derived  `yaml:"derived,omitempty"`
	}{Simulation: simulation{sim.Cycles, sim.Workers, sim.MaxLookahead}}
	for _, u := range e.Units {
		p := u.Params
		if p != nil {
			p = flow(p)
		}
		var ck *Clock
		if u.Clock != (Clock{}) {
			ck = &u.Clock
		}
		doc.Units = append(doc.Units, unit{u.Name, u.Type, p, ck})
	}
	for _, c := range e.Connections {
		doc.Connections = append(doc.Connections, conn(c))
	}
	for _, d := range e.Derived {
		doc.Derived = append(doc.Derived, derived(d))
	}
	return yaml.Marshal(&doc)
}

// flow returns a copy of a params node in flow style, without comments.
func flow(n *yaml.Node) *yaml.Node {
	c := &yaml.Node{Kind: n.Kind, Tag: n.Tag, Value: n.Value, Style: yaml.FlowStyle}
	if n.Kind == yaml.ScalarNode {
		c.Style = n.Style &^ yaml.FlowStyle
	}
	for _, k := range n.Content {
		c.Content = append(c.Content, flow(k))
	}
	return c
}
