package ringbuf

import "reflect"

// hasPointers reports whether a T value can hold a pointer the garbage
// collector follows. Rings clear consumed slots only for such types: for a
// pointer-free T the clear buys nothing and costs the consumer a write to a
// cache line the producer is about to write.
func hasPointers[T any]() bool { return typeHasPointers(reflect.TypeFor[T]()) }

func typeHasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && typeHasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if typeHasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	default: // pointers, strings, slices, maps, chans, funcs, interfaces
		return true
	}
}
