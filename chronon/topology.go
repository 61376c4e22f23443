package chronon

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Config is the simulation section of a topology file.
type Config struct {
	Cycles       uint64 // cycles to run; 0 means until a unit terminates
	Workers      int    // worker goroutines for Simulation.SetWorkers; 1 (the default) is sequential
	MaxLookahead uint64 // the simulation's lookahead (WithMaxLookahead), applied by Parse and Load
	// Effective is the topology as built: groups and buses expanded,
	// parameter overrides applied (see Effective.YAML).
	Effective *Effective
}

// TopologyError is an error in a topology file, with its position.
type TopologyError struct {
	File string
	Line int // 0 if unknown
	Err  error
}

// Error returns "file:line: message". The message of a chronon error
// drops its "chronon: " prefix there: the position already says where.
func (e *TopologyError) Error() string {
	msg := strings.TrimPrefix(e.Err.Error(), "chronon: ")
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, msg)
	}
	return fmt.Sprintf("%s: %s", e.File, msg)
}

// Unwrap returns the underlying error.
func (e *TopologyError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrTopology) true.
func (e *TopologyError) Is(target error) bool { return target == ErrTopology }

// Load reads the topology file at path, builds its units with reg, and
// returns the built simulation and the file's simulation section.
func Load(path string, reg *Registry, opts ...LoadOption) (*Simulation, Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, Config{}, fmt.Errorf("chronon: %w", err)
	}
	return Parse(path, src, reg, opts...)
}

// Parse is Load for a file already in memory; name is used in errors.
//
// The file has these sections:
//
//	simulation:            # optional
//	  cycles: 1000000
//	  workers: 1
//	  max_lookahead: 0
//	units:
//	  - name: fetch
//	    type: cpu.fetch    # a type registered in reg
//	    params: {width: 4} # decoded into the type's params struct
//	    clock: {period: 2, phase: 1} # optional: ticks in odd cycles only
//	  - group: core0       # units named core0.<name>; groups nest
//	    units: [...]
//	    connections: [...] # ports named relative to the group
//	connections:
//	  - from: fetch.out
//	    to: decode.in      # or a list, for a fanout
//	    delay: 1           # default 1
//	    capacity: 8        # default 0, unlimited
//	    rate: 4            # default 1; 0 is unlimited
//	  - bus: {from: [a.out, b.out], to: [x.in, y.in]} # every sender to every receiver
//	derived:               # optional: counters computed per interval
//	  - {name: ipc, expr: writeback.Committed / cycles}
//
// Options override unit parameters (WithParams) or configure the
// simulation (WithSimOptions); Config.Effective is the topology as built.
func Parse(name string, src []byte, reg *Registry, opts ...LoadOption) (*Simulation, Config, error) {
	l := &loader{file: name, reg: reg, cfg: Config{Workers: 1}}
	for _, o := range opts {
		o(&l.opts)
	}
	l.sim = New(l.opts.sim...)
	if err := l.load(src); err != nil {
		return nil, Config{}, l.wrap(err)
	}
	l.cfg.Effective = &l.eff
	return l.sim, l.cfg, nil
}

type loader struct {
	file   string
	reg    *Registry
	sim    *Simulation
	cfg    Config
	prefix string // "group." while loading a group's units and connections
	opts   loadOptions
	eff    Effective
}

// yamlLine matches the "line N: " prefix of go-yaml's messages.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

func (l *loader) wrap(err error) error {
	var te *TopologyError
	if errors.As(err, &te) {
		return err
	}
	var le *lineError
	if errors.As(err, &le) {
		return &TopologyError{File: l.file, Line: le.line, Err: le.err}
	}
	var ye *yaml.TypeError
	if errors.As(err, &ye) && len(ye.Errors) > 0 {
		if m := yamlLine.FindStringSubmatch(ye.Errors[0]); m != nil {
			n, _ := strconv.Atoi(m[1])
			return &TopologyError{File: l.file, Line: n, Err: errors.New(ye.Errors[0][len(m[0]):])}
		}
	}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &TopologyError{File: l.file, Line: n, Err: errors.New(err.Error()[len(m[0]):])}
	}
	return &TopologyError{File: l.file, Err: err}
}

func at(n *yaml.Node, format string, args ...any) error {
	return &lineError{line: n.Line, err: fmt.Errorf(format, args...)}
}

func (l *loader) load(src []byte) error {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return errors.New("topology must be a mapping with units and connections")
	}
	root := doc.Content[0]
	var units, conns, derived *yaml.Node
	for i := 0; i < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "simulation":
			if err := l.simulation(v); err != nil {
				return err
			}
		case "units":
			units = v
		case "connections":
			conns = v
		case "derived":
			derived = v
		default:
			return at(k, "unknown section %q (want simulation, units, connections, derived)", k.Value)
		}
	}
	if units == nil {
		return errors.New("no units section")
	}
	if err := l.units(units); err != nil {
		return err
	}
	if err := l.unusedOverrides(); err != nil {
		return err
	}
	if conns != nil {
		if err := l.connections(conns); err != nil {
			return err
		}
	}
	if derived != nil {
		if err := l.derived(derived); err != nil {
			return err
		}
	}
	if l.cfg.MaxLookahead != 0 {
		l.sim.cfg.lookahead = int(l.cfg.MaxLookahead) // the file's, over WithMaxLookahead
	}
	if err := l.sim.Build(); err != nil {
		return err // a CycleError names each edge with its file:line
	}
	return nil
}

func (l *loader) simulation(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return at(n, "simulation must be a mapping")
	}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var err error
		switch k.Value {
		case "cycles":
			err = v.Decode(&l.cfg.Cycles)
		case "workers":
			if err = v.Decode(&l.cfg.Workers); err == nil && l.cfg.Workers < 1 {
				return at(v, "workers must be at least 1, not %d", l.cfg.Workers)
			}
		case "max_lookahead":
			if err = v.Decode(&l.cfg.MaxLookahead); err == nil && l.cfg.MaxLookahead > MaxLookahead {
				return at(v, "max_lookahead must be 0 to %d, not %d", MaxLookahead, l.cfg.MaxLookahead)
			}
		default:
			return at(k, "unknown simulation key %q (want cycles, workers, max_lookahead)", k.Value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (l *loader) units(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return at(n, "units must be a list")
	}
	for _, u := range n.Content {
		if u.Kind != yaml.MappingNode {
			return at(u, "a unit must be a mapping with name, type and params")
		}
		if isGroup(u) {
			if err := l.group(u); err != nil {
				return err
			}
			continue
		}
		var name, typ, params, clock *yaml.Node
		for i := 0; i < len(u.Content); i += 2 {
			k, v := u.Content[i], u.Content[i+1]
			switch k.Value {
			case "name":
				name = v
			case "type":
				typ = v
			case "params":
				params = v
			case "clock":
				clock = v
			default:
				return at(k, "unknown unit key %q (want name, type, params, clock; or group, units, connections)", k.Value)
			}
		}
		if name == nil || name.Value == "" {
			return at(u, "unit without a name")
		}
		if typ == nil {
			return at(u, "unit %q has no type", name.Value)
		}
		ut, ok := l.reg.types[typ.Value]
		var err error
		if !ok {
			return at(typ, "unknown unit type %q (registered: %s)", typ.Value, strings.Join(l.reg.Types(), ", "))
		}
		full := l.prefix + name.Value
		if params, err = l.override(full, ut, params); err != nil {
			return err
		}
		var ck Clock
		if clock != nil {
			if err := decodeClock(clock, &ck); err != nil {
				return err
			}
		}
		l.eff.Units = append(l.eff.Units, EffectiveUnit{Name: full, Type: typ.Value, Params: params, Clock: ck})
		var unit Unit
		unit, err = ut.make(full, params)
		if err != nil {
			var le *lineError
			var ye *yaml.TypeError
			if errors.As(err, &le) || errors.As(err, &ye) {
				return err
			}
			return at(u, "unit %q: %v", l.prefix+name.Value, err)
		}
		if err := l.sim.Add(l.prefix+name.Value, unit); err != nil {
			return at(name, "%v", err)
		}
		if err := l.sim.SetClock(full, ck); err != nil {
			return at(clock, "%v", err)
		}
	}
	return nil
}

func (l *loader) connections(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return at(n, "connections must be a list")
	}
	for _, c := range n.Content {
		if c.Kind != yaml.MappingNode {
			return at(c, "a connection must be a mapping with from and to")
		}
		if len(c.Content) == 2 && c.Content[0].Value == "bus" {
			if err := l.connection(c.Content[1], true); err != nil {
				return err
			}
			continue
		}
		if err := l.connection(c, false); err != nil {
			return err
		}
	}
	return nil
}

// connection connects one entry: from (one port, or for a bus a list) to
// each port of to.
func (l *loader) connection(c *yaml.Node, bus bool) error {
	what := "connection"
	if bus {
		what = "bus"
		if c.Kind != yaml.MappingNode {
			return at(c, "a bus must be a mapping with from and to lists")
		}
	}
	cfg := defaultConfig()
	cfg.src = l.file + ":" + strconv.Itoa(c.Line)
	var from, to []*yaml.Node
	ports := func(v *yaml.Node, key string) ([]*yaml.Node, error) {
		switch {
		case v.Kind == yaml.ScalarNode:
			return []*yaml.Node{v}, nil
		case v.Kind == yaml.SequenceNode && (bus || key == "to"):
			return v.Content, nil
		case bus:
			return nil, at(v, "%s must be a port or a list of ports", key)
		}
		if key == "from" {
			return nil, at(v, "from must be one port (a list of senders is a bus)")
		}
		return nil, at(v, "to must be a port or a list of ports")
	}
	for i := 0; i < len(c.Content); i += 2 {
		k, v := c.Content[i], c.Content[i+1]
		var err error
		switch k.Value {
		case "from":
			from, err = ports(v, "from")
		case "to":
			to, err = ports(v, "to")
		case "delay":
			err = v.Decode(&cfg.delay)
		case "capacity":
			err = v.Decode(&cfg.capacity)
		case "rate":
			err = v.Decode(&cfg.rate)
		default:
			return at(k, "unknown %s key %q (want from, to, delay, capacity, rate)", what, k.Value)
		}
		if err != nil {
			return err
		}
	}
	if len(from) == 0 || len(to) == 0 {
		return at(c, "%s needs from and to", what)
	}
	if err := cfg.validate(); err != nil {
		return at(c, "%v", err)
	}
	// A bus of N senders and M receivers is N fanouts of M: sender-major
	// connection order, so each receiver's fan-in is in sender order.
	for _, f := range from {
		out, err := l.outPort(f)
		if err != nil {
			return err
		}
		for _, t := range to {
			in, err := l.inPort(t)
			if err != nil {
				return err
			}
			if _, err := out.connectAny(in, cfg); err != nil {
				return at(t, "%v", err)
			}
			l.eff.Connections = append(l.eff.Connections, EffectiveConnection{From: out.fullName(), To: in.fullName(),
				Delay: cfg.delay, Capacity: cfg.capacity, Rate: cfg.rate})
		}
	}
	return nil
}

func (l *loader) unitOf(n *yaml.Node) (*unitState, string, error) {
	if n.Kind != yaml.ScalarNode {
		return nil, "", at(n, "a port is written unit.port")
	}
	// The port is the last segment: units may have dotted names (groups).
	i := strings.LastIndexByte(n.Value, '.')
	if i <= 0 || i == len(n.Value)-1 {
		return nil, "", at(n, "port %q is not written unit.port", n.Value)
	}
	u, p := n.Value[:i], n.Value[i+1:]
	us, ok := l.sim.byName[l.prefix+u] // a unit of the group whose connections these are
	if !ok {
		us, ok = l.sim.byName[u]
	}
	if !ok {
		if l.prefix != "" {
			return nil, "", at(n, "unknown unit %q in %q (neither %q in group %s nor a full name)", u, n.Value, l.prefix+u, strings.TrimSuffix(l.prefix, "."))
		}
		return nil, "", at(n, "unknown unit %q in %q", u, n.Value)
	}
	return us, p, nil
}

func (l *loader) outPort(n *yaml.Node) (outPortAny, error) {
	us, name, err := l.unitOf(n)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range us.outs {
		if p.localName() == name {
			return p, nil
		}
		names = append(names, p.localName())
	}
	return nil, at(n, "unit %q has no output port %q (outputs: %s)", us.name, name, list(names))
}

func (l *loader) inPort(n *yaml.Node) (inPortAny, error) {
	us, name, err := l.unitOf(n)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range us.ins {
		if p.localName() == name {
			return p, nil
		}
		names = append(names, p.localName())
	}
	return nil, at(n, "unit %q has no input port %q (inputs: %s)", us.name, name, list(names))
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}
