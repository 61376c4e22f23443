package ledger

import "unsafe"

// The overlay replaces a private copy of all cells in the Transactor. Its
// slots are per account (slot of the accountTable) and hold all four
// columns; "balance" below is the four columns, and readable[a] the
// account's four readable cells.
//
// The Transactor runs ahead of the Snapshotter: the readable balances lag its
// working balances by the transactions between Snapshot and Computed. The
// overlay is a fixed-size open-addressing hash table (linear probing, no Go
// map, preallocated) holding, for every account an executed transaction
// changed, its working balance and the low 32 bits of the id of the last
// transaction that changed it. A slot, while it exists, always holds the
// account's working balance (every entry the Transactor makes updates it), so
// a lookup needs no index: slot found, its balance; else readable[a].
//
// A slot may be deleted once its last transaction t is at or below a Snapshot
// index S the Transactor loaded. Then readable[a] holds the account's working
// balance: the Snapshotter stored readable[a] = balance after t before it
// stored Snapshot >= t (program order), the Transactor's load of Snapshot
// observed that store, so by the Go memory model (sync/atomic operations are
// sequentially consistent) its later load of readable[a] observes the store
// after t or a later one; and there is no later one, because an entry for a
// after t would have been made by the Transactor and would have a slot.
// An account without a slot and never deleted has had no entry since Open:
// its readable balance, stored before the stages started, is exact.
//
// Deletion is a sweep of the whole table (backward-shift deletion, no
// tombstones) when an insert would take occupancy above half the slots. To
// amortize it, a sweep is allowed only once Snapshot has reached the last
// transaction executed before the previous sweep, so each sweep frees every
// slot untouched since the previous one. If there is still no room, the
// Transactor ends its run, publishes it, and waits (back pressure) until
// Snapshot passes that mark: everything it published is then applied, and
// the sweep frees every slot not changed since. It never returns a wrong
// balance; a full table only slows the Transactor down.
//
// The 32-bit ids compare exactly: a live slot's id is within the ring
// capacity (2 x RingSize <= 2^25 transactions) above Snapshot, and a sweep
// is forced every 2^30 transactions, so a stale slot is less than 2^31 below
// it at any sweep.

const (
	// overlaySlotsPerRing sizes the table: slots per RingSize. Transactions
	// between Snapshot and Computed are at most two rings' worth; at two
	// entries each (deposits, transfers) and half occupancy, 8 x RingSize
	// slots would never need back pressure. 4 x RingSize keeps the table
	// small and has room for a full WAL ring's distinct accounts.
	overlaySlotsPerRing = 4
	// overlayMinSlots is room for a maximal composite twice over.
	overlayMinSlots = 1024
	// overlayForcedSweep bounds the age of a slot at any sweep (see above).
	overlayForcedSweep = 1 << 30
)

// ovSlot holds an account's four working columns: one probe answers every
// check a transfer makes on the account.
type ovSlot struct {
	acct uint32 // account slot + 1; 0 marks an empty slot (slots < 2^28)
	last uint32 // low 32 bits of the id of the last transaction that changed it
	cols [numColumns]int64
}

type overlay struct {
	slots     []ovSlot // power-of-two length
	mask      uint64
	shift     uint   // 64 - log2(len(slots)), for Fibonacci hashing
	n         int    // occupied slots
	limit     int    // occupancy bound: half the slots
	barrier   uint64 // last transaction executed at the previous sweep
	lastSweep uint64 // Snapshot index at the previous sweep
	sweeps    uint64 // sweeps done (published to Stats by the Transactor)
}

func overlaySlots(ringSize int) int {
	n := overlayMinSlots
	for n < overlaySlotsPerRing*ringSize {
		n *= 2
	}
	return n
}

func newOverlay(slots int, at uint64) overlay {
	shift := uint(64)
	for s := slots; s > 1; s >>= 1 {
		shift--
	}
	o := overlay{slots: make([]ovSlot, slots), mask: uint64(slots - 1), shift: shift, limit: slots / 2, barrier: at, lastSweep: at}
	adviseHuge(unsafe.Pointer(&o.slots[0]), uintptr(slots)*unsafe.Sizeof(ovSlot{}))
	return o
}

func (o *overlay) home(a uint64) uint64 { return (a * 0x9E3779B97F4A7C15) >> o.shift }

// find returns the index of account a's slot and true, or the index of the
// empty slot where its probe ends (where set would insert it) and false.
func (o *overlay) find(a uint64) (uint64, bool) {
	k := uint32(a + 1)
	for i := o.home(a); ; i = (i + 1) & o.mask {
		switch o.slots[i].acct {
		case k:
			return i, true
		case 0:
			return i, false
		}
	}
}

// put records slot a's working columns after transaction id at index i
// from find (found: a's slot; else the empty slot ending its probe, which
// must still be empty). The caller made sure that occupancy is below the
// limit.
func (o *overlay) put(i uint64, found bool, a uint64, cols *[numColumns]int64, id uint64) {
	s := &o.slots[i]
	if found {
		s.cols, s.last = *cols, uint32(id)
		return
	}
	*s = ovSlot{acct: uint32(a + 1), last: uint32(id), cols: *cols}
	o.n++
}

// touched is put for columns that, if found, were changed in place.
func (o *overlay) touched(i uint64, found bool, a uint64, cols *[numColumns]int64, id uint64) {
	if found {
		o.slots[i].last = uint32(id)
		return
	}
	o.slots[i] = ovSlot{acct: uint32(a + 1), last: uint32(id), cols: *cols}
	o.n++
}

// room reports whether need more slots fit. If not, and a sweep is allowed
// (the Snapshot index, loaded through snapshot, has reached the barrier),
// it sweeps and sets the barrier to executed, the last transaction executed
// so far. The common case is the first comparison, inlined at the caller.
func (o *overlay) room(need int, snapshot func() uint64, executed uint64) bool {
	return o.n+need <= o.limit || o.makeRoom(need, snapshot, executed)
}

func (o *overlay) makeRoom(need int, snapshot func() uint64, executed uint64) bool {
	snap := snapshot()
	if snap < o.barrier {
		return false
	}
	o.sweep(snap)
	o.barrier = executed
	return o.n+need <= o.limit
}

// sweep deletes every slot whose last transaction is at or below snap.
func (o *overlay) sweep(snap uint64) {
	s32 := uint32(snap)
	for i := uint64(0); i < uint64(len(o.slots)); {
		s := &o.slots[i]
		if s.acct != 0 && int32(s.last-s32) <= 0 {
			o.remove(i) // may shift a later slot into i: look at i again
			continue
		}
		i++
	}
	o.lastSweep = snap
	o.sweeps++
}

// remove empties slot i by backward-shift deletion: every later slot of the
// probe run whose home does not lie cyclically in (i, j] moves into the hole,
// so lookups never cross an empty slot before their key. The hole only moves
// forward, so a sweep in index order still visits every slot.
func (o *overlay) remove(i uint64) {
	hole := i
	for j := (i + 1) & o.mask; o.slots[j].acct != 0; j = (j + 1) & o.mask {
		h := o.home(uint64(o.slots[j].acct - 1))
		if (j-h)&o.mask >= (j-hole)&o.mask {
			o.slots[hole] = o.slots[j]
			hole = j
		}
	}
	o.slots[hole] = ovSlot{}
	o.n--
}
