package chronon

import "strings"

// Group is a named part of a simulation's unit hierarchy: units added to it
// are named "group.unit", and groups nest ("core0.lsu.alu[2]"). The full
// name is the unit's name everywhere: Unit, port names, counter columns,
// trace threads and errors. A name segment is any non-empty text without
// dots or white space, so an index is written as part of it ("alu[2]").
type Group struct {
	s    *Simulation
	path string
}

// Group returns the top-level group named name.
func (s *Simulation) Group(name string) *Group { return &Group{s: s, path: name} }

// Group returns the group name inside g.
func (g *Group) Group(name string) *Group { return &Group{s: g.s, path: g.path + "." + name} }

// Name returns the group's full name.
func (g *Group) Name() string { return g.path }

// Add adds u to the simulation as "group.name".
func (g *Group) Add(name string, u Unit) error { return g.s.Add(g.path+"."+name, u) }

// checkUnitName accepts a dot-separated path of segments, each non-empty
// and without white space.
func checkUnitName(name string) error {
	for seg := range strings.SplitSeq(name, ".") {
		if seg == "" || strings.ContainsAny(seg, " \t\n") {
			return topoErr("invalid unit name %q (want dot-separated non-empty names without spaces, such as core0.alu[2])", name)
		}
	}
	return nil
}
