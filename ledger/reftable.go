package ledger

// refTable is the Transactor's exact map from UserRef to the transaction
// that first used it, for every ref within the retention: an open-addressing
// table (linear probing, no Go map, no per-entry allocation) of 16-byte
// slots. The key is refHash(ref), a bijection of the ref, so a slot's hash
// names its ref exactly and no stored copy needs to be read to confirm a hit.
//
// Expired entries stay until the table would pass half full; then it is
// rebuilt without them (grown if the live entries need it). So a lookup may
// find an entry past the retention: the caller decides with the id (see
// refIndex.lookup).
type refTable struct {
	slots []refSlot // len a power of two
	n     int       // occupied slots
}

// refSlot is one entry; id 0 marks an empty slot (ids start at 1).
type refSlot struct {
	h, id uint64
}

const refTableMinSlots = 1 << 16

// refHash mixes ref with splitmix64's finalizer, which is invertible: user
// refs are often sequential, and the probe position needs all of their bits.
func refHash(ref uint64) uint64 {
	h := ref
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	return h ^ h>>31
}

func newRefTable(entries int) refTable {
	n := refTableMinSlots
	for n < 2*entries {
		n *= 2
	}
	return refTable{slots: make([]refSlot, n)}
}

func (t *refTable) home(h uint64) uint64 { return h & uint64(len(t.slots)-1) }

// get returns the id stored for ref's hash h.
func (t *refTable) get(h uint64) (uint64, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(h); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			return 0, false
		}
		if s.h == h {
			return s.id, true
		}
	}
}

// put stores id for h, replacing an older entry for the same ref. Past half
// full it first drops the entries below keepFrom and grows if still needed.
func (t *refTable) put(h, id, keepFrom uint64) {
	if 2*(t.n+1) > len(t.slots) {
		t.rebuild(keepFrom)
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(h); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			*s = refSlot{h: h, id: id}
			t.n++
			return
		}
		if s.h == h {
			s.id = id
			return
		}
	}
}

// rebuild keeps the entries with id >= keepFrom, in a table at most a
// quarter full after it.
func (t *refTable) rebuild(keepFrom uint64) {
	live := 0
	for i := range t.slots {
		if id := t.slots[i].id; id != 0 && id >= keepFrom {
			live++
		}
	}
	old := t.slots
	nt := newRefTable(2 * live)
	if len(nt.slots) < len(old) {
		nt = refTable{slots: make([]refSlot, len(old))} // never shrink: the load came back once
	}
	for i := range old {
		if s := old[i]; s.id != 0 && s.id >= keepFrom {
			nt.put(s.h, s.id, 0)
		}
	}
	*t = nt
}
