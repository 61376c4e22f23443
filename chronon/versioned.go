package chronon

import "fmt"

// VersionedRegister is a value with the cycle it was written, readable as
// of an earlier cycle: it keeps the last depth writes, so At(c) answers
// "what did the register hold at the end of cycle c" while c is within
// that history. A write in cycle c is visible to At(c) and later; Write
// with the unit's own Cycle keeps it in step with the model. Plain unit
// state; nothing allocates after NewVersionedRegister.
type VersionedRegister[T any] struct {
	hist []version[T] // a ring of the newest writes
	n    int          // writes recorded, up to len(hist)
	head int          // index of the newest write
}

type version[T any] struct {
	cycle uint64
	v     T
}

// NewVersionedRegister returns a register that holds initial from cycle 0
// and remembers the last depth writes; depth must be at least 1.
func NewVersionedRegister[T any](depth int, initial T) (*VersionedRegister[T], error) {
	if depth < 1 {
		return nil, fmt.Errorf("%w: a versioned register keeps at least 1 write, not %d", ErrTopology, depth)
	}
	r := &VersionedRegister[T]{hist: make([]version[T], depth)}
	r.hist[0] = version[T]{0, initial}
	r.n = 1
	return r, nil
}

// Write stores v as written in cycle c. Writes must come in cycle order; a
// second write in the same cycle replaces the first. An older cycle is a
// modelling bug: Write panics, which the engine reports as the unit's
// *UnitError.
func (r *VersionedRegister[T]) Write(c uint64, v T) {
	h := &r.hist[r.head]
	switch {
	case c == h.cycle:
		h.v = v
		return
	case c < h.cycle:
		panic("chronon: VersionedRegister written out of cycle order")
	}
	r.head = (r.head + 1) % len(r.hist)
	r.hist[r.head] = version[T]{c, v}
	r.n = min(r.n+1, len(r.hist))
}

// Read returns the newest value and the cycle it was written in.
func (r *VersionedRegister[T]) Read() (T, uint64) {
	h := &r.hist[r.head]
	return h.v, h.cycle
}

// At returns the value the register held at the end of cycle c and the
// cycle that value was written in; ok is false when c is older than the
// history kept.
func (r *VersionedRegister[T]) At(c uint64) (v T, written uint64, ok bool) {
	for i := range r.n {
		h := &r.hist[(r.head-i+len(r.hist))%len(r.hist)]
		if h.cycle <= c {
			return h.v, h.cycle, true
		}
	}
	return v, 0, false
}
