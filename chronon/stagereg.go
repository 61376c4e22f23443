package chronon

// StageRegister is a pipeline latch holding at most one value, with the
// valid, stall and flush behaviour of a hardware stage register: Load
// fills an empty latch, a full one stalls (Load refuses and the value stays
// put until Take), and Flush empties it when the held value matches. The
// zero value is an empty latch. It is plain unit state: only the owning
// unit's Tick may use it, and it allocates nothing.
type StageRegister[T any] struct {
	v     T
	valid bool
}

// Valid reports whether the latch holds a value.
func (r *StageRegister[T]) Valid() bool { return r.valid }

// Load latches v if the latch is empty and reports whether it did; a full
// latch stalls.
func (r *StageRegister[T]) Load(v T) bool {
	if r.valid {
		return false
	}
	r.v, r.valid = v, true
	return true
}

// Value returns the held value for reading or updating in place; nil when
// the latch is empty.
func (r *StageRegister[T]) Value() *T {
	if !r.valid {
		return nil
	}
	return &r.v
}

// Take empties the latch and returns what it held.
func (r *StageRegister[T]) Take() (T, bool) {
	v, ok := r.v, r.valid
	r.Clear()
	return v, ok
}

// Clear empties the latch.
func (r *StageRegister[T]) Clear() {
	var zero T
	r.v, r.valid = zero, false // no payload stays reachable
}

// Flush empties the latch if it holds a value for which drop returns true,
// and reports whether it did.
func (r *StageRegister[T]) Flush(drop func(*T) bool) bool {
	if !r.valid || !drop(&r.v) {
		return false
	}
	r.Clear()
	return true
}
