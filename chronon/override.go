package chronon

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// LoadOption configures Load and Parse.
type LoadOption func(*loadOptions)

type loadOptions struct {
	params []ParamOverride
	used   []bool
	sim    []SimOption
}

// ParamOverride sets one unit parameter, replacing the topology's value:
// Value is read as a YAML scalar into the parameter's type.
type ParamOverride struct {
	Unit, Param, Value string
}

// String returns "unit.param=value".
func (o ParamOverride) String() string { return o.Unit + "." + o.Param + "=" + o.Value }

// ParseParamOverride parses "unit.param=value"; the unit may be a group
// path ("core0.alu[2].id=3": the parameter is the last segment).
func ParseParamOverride(s string) (ParamOverride, error) {
	lhs, v, ok := strings.Cut(s, "=")
	i := strings.LastIndexByte(lhs, '.')
	if !ok || i <= 0 || i == len(lhs)-1 {
		return ParamOverride{}, fmt.Errorf("%w: parameter override %q is not written unit.param=value", ErrTopology, s)
	}
	return ParamOverride{Unit: lhs[:i], Param: lhs[i+1:], Value: v}, nil
}

// WithParams overrides unit parameters; an override naming no unit of the
// topology, or no parameter of its type, fails the load with an error
// naming it.
func WithParams(o ...ParamOverride) LoadOption {
	return func(l *loadOptions) {
		l.params = append(l.params, o...)
		l.used = append(l.used, make([]bool, len(o))...)
	}
}

// WithSimOptions passes opts to the New that Load and Parse call.
func WithSimOptions(opts ...SimOption) LoadOption {
	return func(l *loadOptions) { l.sim = append(l.sim, opts...) }
}

// OverrideError is a parameter override that names no unit or parameter,
// or whose value does not fit the parameter.
type OverrideError struct {
	Override ParamOverride
	Err      error
}

func (e *OverrideError) Error() string        { return fmt.Sprintf("-p %s: %v", e.Override, e.Err) }
func (e *OverrideError) Unwrap() error        { return e.Err }
func (e *OverrideError) Is(target error) bool { return target == ErrTopology }

// override applies the overrides for unit name of type ut to its params
// node, which it returns (a new mapping when the topology had none).
func (l *loader) override(name string, ut *unitType, params *yaml.Node) (*yaml.Node, error) {
	for i, o := range l.opts.params {
		if o.Unit != name {
			continue
		}
		l.opts.used[i] = true
		f, ok := paramField(ut.params, o.Param)
		if !ok {
			return nil, &OverrideError{o, fmt.Errorf("unit %q has no parameter %q (want one of %s)", name, o.Param, list(paramNames(ut.params)))}
		}
		val := &yaml.Node{Kind: yaml.ScalarNode, Value: o.Value}
		if err := val.Decode(reflect.New(f.Type).Interface()); err != nil {
			var te *yaml.TypeError
			if errors.As(err, &te) && len(te.Errors) > 0 {
				err = errors.New(te.Errors[0])
			}
			return nil, &OverrideError{o, fmt.Errorf("value %q does not fit %s (%v): %v", o.Value, o.Param, f.Type, err)}
		}
		if params == nil {
			params = &yaml.Node{Kind: yaml.MappingNode}
		}
		if params.Kind != yaml.MappingNode {
			return nil, at(params, "unit %q: params must be a mapping", name)
		}
		replaced := false
		for j := 0; j < len(params.Content); j += 2 {
			if params.Content[j].Value == o.Param {
				params.Content[j+1] = val
				replaced = true
			}
		}
		if !replaced {
			params.Content = append(params.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: o.Param}, val)
		}
	}
	return params, nil
}

// unusedOverrides fails for the first override that named no unit.
func (l *loader) unusedOverrides() error {
	for i, o := range l.opts.params {
		if !l.opts.used[i] {
			names := slices.Sorted(func(yield func(string) bool) {
				for n := range l.sim.byName {
					if !yield(n) {
						return
					}
				}
			})
			return &OverrideError{o, fmt.Errorf("no unit %q (units: %s)", o.Unit, strings.Join(names, ", "))}
		}
	}
	return nil
}

// paramField returns the field of the params struct t that YAML key name
// decodes into.
func paramField(t reflect.Type, name string) (reflect.StructField, bool) {
	if t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && paramKey(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func paramNames(t reflect.Type) []string {
	var names []string
	if t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && paramKey(f) != "-" {
				names = append(names, paramKey(f))
			}
		}
	}
	return names
}

// paramKey is the YAML key of a params field: its yaml tag's name, or its
// lower-cased name.
func paramKey(f reflect.StructField) string {
	if tag, ok := f.Tag.Lookup("yaml"); ok {
		if n, _, _ := strings.Cut(tag, ","); n != "" {
			return n
		}
	}
	return strings.ToLower(f.Name)
}
