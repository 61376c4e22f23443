package ledger

import "math/bits"

// idTable maps transaction ids (never 0) to values: open addressing with
// linear probing and backward-shift deletion, so that a table whose keys
// churn (pending transfers made and resolved all day) keeps its probes
// short without tombstones, which Go maps pay for under that churn (a
// tenth of BenchmarkSubmitPendingPost's CPU went to probing them). It
// doubles past half full and never shrinks. One writer; not safe for
// concurrent use.
type idTable[V any] struct {
	slots []idSlot[V] // len a power of two
	shift uint        // 64 - log2(len(slots)), for Fibonacci hashing
	n     int
}

type idSlot[V any] struct {
	id uint64 // 0: empty
	v  V
}

const idTableMinSlots = 64

func newIDTable[V any]() idTable[V] {
	return idTable[V]{slots: make([]idSlot[V], idTableMinSlots), shift: 64 - 6}
}

func (t *idTable[V]) home(id uint64) uint64 { return (id * 0x9E3779B97F4A7C15) >> t.shift }

// find returns id's slot index and true, or the index of the empty slot
// ending its probe and false.
func (t *idTable[V]) find(id uint64) (uint64, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(id); ; i = (i + 1) & mask {
		switch t.slots[i].id {
		case id:
			return i, true
		case 0:
			return i, false
		}
	}
}

func (t *idTable[V]) get(id uint64) (V, bool) {
	i, ok := t.find(id)
	return t.slots[i].v, ok
}

func (t *idTable[V]) len() int { return t.n }

// put sets id's value.
func (t *idTable[V]) put(id uint64, v V) {
	i, ok := t.find(id)
	if ok {
		t.slots[i].v = v
		return
	}
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
		i, _ = t.find(id)
	}
	t.slots[i] = idSlot[V]{id: id, v: v}
	t.n++
}

func (t *idTable[V]) grow() {
	old := t.slots
	t.slots = make([]idSlot[V], 2*len(old))
	t.shift = uint(64 - bits.TrailingZeros(uint(len(t.slots))))
	for _, s := range old {
		if s.id != 0 {
			i, _ := t.find(s.id)
			t.slots[i] = s
		}
	}
}

// del removes id, if present: every later slot of its probe run whose home
// does not lie cyclically in (hole, j] moves into the hole.
func (t *idTable[V]) del(id uint64) {
	i, ok := t.find(id)
	if !ok {
		return
	}
	mask := uint64(len(t.slots) - 1)
	hole := i
	for j := (i + 1) & mask; t.slots[j].id != 0; j = (j + 1) & mask {
		h := t.home(t.slots[j].id)
		if (j-h)&mask >= (j-hole)&mask {
			t.slots[hole] = t.slots[j]
			hole = j
		}
	}
	t.slots[hole] = idSlot[V]{}
	t.n--
}

// each calls fn for every entry, in no particular order.
func (t *idTable[V]) each(fn func(id uint64, v V)) {
	for i := range t.slots {
		if s := &t.slots[i]; s.id != 0 {
			fn(s.id, s.v)
		}
	}
}

// clone returns a copy of t.
func (t *idTable[V]) clone() idTable[V] {
	c := *t
	c.slots = append([]idSlot[V](nil), t.slots...)
	return c
}
