package chronon

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// derived loads the derived section:
//
//	derived:
//	  - {name: ipc, expr: writeback.Committed / cycles}
func (l *loader) derived(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return at(n, "derived must be a list of {name, expr}")
	}
	for _, d := range n.Content {
		if d.Kind != yaml.MappingNode {
			return at(d, "a derived counter must be a mapping with name and expr")
		}
		var name, expr *yaml.Node
		for i := 0; i < len(d.Content); i += 2 {
			k, v := d.Content[i], d.Content[i+1]
			switch k.Value {
			case "name":
				name = v
			case "expr":
				expr = v
			default:
				return at(k, "unknown derived key %q (want name, expr)", k.Value)
			}
		}
		if name == nil || expr == nil {
			return at(d, "a derived counter needs name and expr")
		}
		if err := l.sim.DeriveCounter(name.Value, expr.Value); err != nil {
			return at(expr, "%s", strings.TrimPrefix(err.Error(), ErrTopology.Error()+": "))
		}
		l.eff.Derived = append(l.eff.Derived, DerivedCounter{Name: name.Value, Expr: expr.Value})
	}
	return nil
}
