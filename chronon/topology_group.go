package chronon

import "go.yaml.in/yaml/v3"

// isGroup reports whether a units entry is a group: a mapping with a group
// key.
func isGroup(n *yaml.Node) bool {
	for i := 0; i < len(n.Content); i += 2 {
		if n.Content[i].Value == "group" {
			return true
		}
	}
	return false
}

// group loads a units entry of the form
//
//   - group: core0
//     units: [...]        # named core0.<name>; may hold groups
//     connections: [...]  # ports of the group's units by their names in it
//
// A port in a group's connections names a unit of the group ("alu[2].in"
// for core0.alu[2]) or, when the group has none of that name, a unit by its
// full name.
func (l *loader) group(n *yaml.Node) error {
	var name, units, conns *yaml.Node
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "group":
			name = v
		case "units":
			units = v
		case "connections":
			conns = v
		default:
			return at(k, "unknown group key %q (want group, units, connections)", k.Value)
		}
	}
	if name.Kind != yaml.ScalarNode || checkUnitName(name.Value) != nil {
		return at(name, "invalid group name %q (want a non-empty name without spaces)", name.Value)
	}
	if units == nil {
		return at(n, "group %q has no units", l.prefix+name.Value)
	}
	outer := l.prefix
	l.prefix = outer + name.Value + "."
	defer func() { l.prefix = outer }()
	if err := l.units(units); err != nil {
		return err
	}
	if conns != nil {
		return l.connections(conns)
	}
	return nil
}
