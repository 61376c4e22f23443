package chronon

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Registry maps unit type names to factories, for topologies loaded from
// YAML. The zero value is not usable; create one with NewRegistry.
type Registry struct {
	types map[string]*unitType
}

type unitType struct {
	params reflect.Type
	make   func(name string, params *yaml.Node) (Unit, error)
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{types: make(map[string]*unitType)} }

// Register adds the unit type typ to r. A topology's params mapping for a
// unit of this type is decoded into a P (starting from its zero value, with
// the yaml field tags of P) and passed to factory with the unit's name.
// Keys that match no field of P are errors. Register panics if typ is
// already registered.
func Register[P any](r *Registry, typ string, factory func(name string, params P) (Unit, error)) {
	if _, dup := r.types[typ]; dup {
		panic("chronon: unit type " + typ + " registered twice")
	}
	pt := reflect.TypeFor[P]()
	r.types[typ] = &unitType{
		params: pt,
		make: func(name string, node *yaml.Node) (Unit, error) {
			var p P
			if node != nil {
				if err := checkKeys(pt, node); err != nil {
					return nil, err
				}
				if err := node.Decode(&p); err != nil {
					return nil, err
				}
			}
			return factory(name, p)
		},
	}
}

// Types returns the registered type names, sorted.
func (r *Registry) Types() []string {
	names := make([]string, 0, len(r.types))
	for n := range r.types {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// checkKeys rejects mapping keys that name no field of the struct type t,
// with the line of the key.
func checkKeys(t reflect.Type, node *yaml.Node) error {
	if t.Kind() != reflect.Struct || node.Kind != yaml.MappingNode {
		return nil
	}
	known := make(map[string]bool)
	for i := range t.NumField() {
		f := t.Field(i)
		name := strings.ToLower(f.Name)
		if tag, ok := f.Tag.Lookup("yaml"); ok {
			if n, _, _ := strings.Cut(tag, ","); n != "" {
				name = n
			}
		}
		if f.IsExported() && name != "-" {
			known[name] = true
		}
	}
	for i := 0; i < len(node.Content); i += 2 {
		k := node.Content[i]
		if !known[k.Value] {
			names := make([]string, 0, len(known))
			for n := range known {
				names = append(names, n)
			}
			slices.Sort(names)
			return &lineError{line: k.Line, err: fmt.Errorf("unknown parameter %q (want one of %s)", k.Value, strings.Join(names, ", "))}
		}
	}
	return nil
}

// lineError carries a line for a TopologyError.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e *lineError) Unwrap() error { return e.err }
