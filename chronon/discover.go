package chronon

import (
	"reflect"
	"strconv"
	"unsafe"
)

var (
	outPortType  = reflect.TypeFor[outPortAny]()
	inPortType   = reflect.TypeFor[inPortAny]()
	noCancelType = reflect.TypeFor[noCancelPort]()
	counterType  = reflect.TypeFor[Counter]()
	baseType     = reflect.TypeFor[Base]()
	partsType    = reflect.TypeFor[composite]()
)

// composite is implemented by toolkit fields that hold a port and counters
// of their own (ReliableSender): Add binds the port under the field's name
// and each counter as "field.counter".
type composite interface {
	parts() (port any, ctrs []namedCtr)
}

// discover binds the ports and counters declared in the fields of u, which
// must be a pointer to a struct for it to have any.
func discover(us *unitState, u Unit) error {
	v := reflect.ValueOf(u)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	seen := make(map[string]bool)
	return discoverStruct(us, v.Elem(), seen)
}

func discoverStruct(us *unitState, v reflect.Value, seen map[string]bool) error {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		name := sf.Name
		if tag, ok := sf.Tag.Lookup("chronon"); ok {
			if tag == "-" {
				continue
			}
			name = tag
		}
		f := v.Field(i)
		switch {
		case sf.Type == baseType:
			continue
		case isElement(sf.Type):
			if err := discoverField(us, f, name, seen); err != nil {
				return err
			}
		case sf.Type.Kind() == reflect.Array && isElement(sf.Type.Elem()):
			for j := range f.Len() {
				if err := discoverField(us, f.Index(j), name+"["+strconv.Itoa(j)+"]", seen); err != nil {
					return err
				}
			}
		case sf.Anonymous && sf.Type.Kind() == reflect.Struct:
			if err := discoverStruct(us, f, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

func isElement(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t == counterType || p.Implements(partsType) || p.Implements(outPortType) || p.Implements(inPortType) || p.Implements(noCancelType)
}

func discoverField(us *unitState, f reflect.Value, name string, seen map[string]bool) error {
	if seen[name] {
		return topoErr("unit %q declares %q twice", us.name, name)
	}
	seen[name] = true
	// NewAt reaches unexported fields too; the unit struct is addressable
	// because Add received a pointer to it.
	ptr := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Interface()
	if c, ok := ptr.(composite); ok {
		port, ctrs := c.parts()
		for _, k := range ctrs {
			if err := discoverField(us, reflect.ValueOf(k.c).Elem(), name+"."+k.name, seen); err != nil {
				return err
			}
		}
		ptr = port
	}
	if nc, ok := ptr.(noCancelPort); ok {
		ptr = nc.noCancel()
	}
	switch p := ptr.(type) {
	case *Counter:
		us.ctrs = append(us.ctrs, namedCtr{name: name, c: p})
	case outPortAny:
		if p.unit() != nil {
			return topoErr("port %s of unit %q is already bound to unit %q", name, us.name, p.unit().name)
		}
		p.bind(us, name)
		us.outs = append(us.outs, p)
	case inPortAny:
		if p.unit() != nil {
			return topoErr("port %s of unit %q is already bound to unit %q", name, us.name, p.unit().name)
		}
		p.bind(us, name)
		us.ins = append(us.ins, p)
	}
	return nil
}
