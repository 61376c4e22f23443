package ledger

import (
	"sync/atomic"
	"unsafe"

	"github.com/lanework/lanework/ringbuf"
)

// AccountFlags set an account's rules at creation.
type AccountFlags uint16

// Account flags.
const (
	// DebitsMustNotExceedCredits: a transfer fails with ExceedsCredits if it
	// would leave debits_pending + debits_posted above credits_posted.
	DebitsMustNotExceedCredits AccountFlags = 1 << iota
	// CreditsMustNotExceedDebits: a transfer fails with ExceedsDebits if it
	// would leave credits_pending + credits_posted above debits_posted.
	CreditsMustNotExceedDebits
	// History asks for the account's history to be kept (reserved for the
	// history index; stored and compared, no effect yet).
	History
	// Closed: the account takes no transfer (debit_account_already_closed,
	// credit_account_already_closed). Set at creation; closing an open
	// account by a transfer is not built yet.
	Closed
	accountFlagsMask = DebitsMustNotExceedCredits | CreditsMustNotExceedDebits | History | Closed
)

var accountFlagNames = [...]string{"debits_must_not_exceed_credits", "credits_must_not_exceed_debits", "history", "closed"}

// Names returns the snake_case names of the flags set in f, in bit order.
func (f AccountFlags) Names() []string {
	names := []string{}
	for i, n := range accountFlagNames {
		if f&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return names
}

// AccountFlagByName returns the flag whose snake_case name is s.
func AccountFlagByName(s string) (AccountFlags, bool) {
	for i, n := range accountFlagNames {
		if n == s {
			return 1 << i, true
		}
	}
	return 0, false
}

// Column names one of an account's four amounts.
type Column uint8

// The columns, in the order of an account's cells.
const (
	DebitsPosted Column = iota
	CreditsPosted
	DebitsPending
	CreditsPending
	numColumns
)

var columnNames = [...]string{"debits_posted", "credits_posted", "debits_pending", "credits_pending"}

// String returns the column's snake_case name.
func (c Column) String() string {
	if c < numColumns {
		return columnNames[c]
	}
	return "invalid"
}

// maxColumn is the largest value a column holds. Columns are unsigned in
// the API, but each is stored in a signed 64-bit cell (the same cells the
// snapshots and recovery handle), so a transfer that would take one above
// 2^63-1 fails with an overflows_* reason instead of wrapping.
const maxColumn = 1<<63 - 1

// Account is a created account as Lookup returns it.
type Account struct {
	ID       uint64
	Ledger   uint32
	Code     uint16
	Flags    AccountFlags
	UserData [2]uint64
	// The four columns (see Column).
	DebitsPosted, CreditsPosted, DebitsPending, CreditsPending uint64
}

// Balance is CreditsPosted - DebitsPosted, the account's posted balance.
func (a Account) Balance() int64 { return int64(a.CreditsPosted) - int64(a.DebitsPosted) }

// acctMeta is an account's immutable part, one per slot. 32 bytes.
type acctMeta struct {
	id       uint64
	userData [2]uint64
	ledger   uint32
	code     uint16
	flags    AccountFlags
}

// accountTable maps sparse account ids to dense slots. Slot s owns cells
// 4s..4s+3 of the balances (one per Column, one 32-byte group); slot 0 is
// the system account (id 0), which exists without being created. Slots are
// handed out in creation order, so the accounts as of any transaction are
// a prefix of the slots, and a replay assigns the same ones.
//
// The index is open addressing with linear probing over 16-byte entries
// that carry what a transfer checks: the id, and the slot, flags and
// ledger packed in one word (info), so that one cache line answers a probe
// without a look at the metadata. It is preallocated at 1.5 x MaxAccounts
// rounded up to a power of two (at most two thirds full, never resized).
// Only the Transactor (or recovery, before the stages start) inserts;
// readers probe concurrently with atomic loads: an insert writes the
// slot's metadata, then the entry's info, then its id, the words with
// release stores (insertAt), so a reader that finds the id sees the rest.
// Ids are never removed.
//
// Cost per account: 32 bytes of metadata, 32 bytes of cells, and 16 bytes
// per index entry, 1.5 to 3 entries per account of MaxAccounts (24 to 48
// bytes); all preallocated from MaxAccounts at Open.
type accountTable struct {
	index []acctEntry
	mask  uint64
	shift uint
	meta  []acctMeta
	n     uint64 // slots in use, including the system account: written by the inserter only
}

// acctEntry is one index entry; id 0 marks it empty.
type acctEntry struct {
	id   atomic.Uint64
	info atomic.Uint64 // packInfo
}

// An entry's info: slot (< 2^28) in bits 0-27, flags (4 bits) in 28-31,
// ledger in 32-63. The system account's is 0: slot 0, no flags, ledger 0
// (it belongs to every ledger).
func packInfo(s uint64, m *acctMeta) uint64 {
	return s | uint64(m.flags&accountFlagsMask)<<28 | uint64(m.ledger)<<32
}

func infoSlot(info uint64) uint64              { return info & (1<<28 - 1) }
func infoLedger(info uint64) uint32            { return uint32(info >> 32) }
func infoHas(info uint64, f AccountFlags) bool { return info&(uint64(f)<<28) != 0 }

func newAccountTable(maxAccounts uint64) *accountTable {
	size := uint64(4)
	for size < maxAccounts+maxAccounts/2 {
		size *= 2
	}
	shift := uint(64)
	for s := size; s > 1; s >>= 1 {
		shift--
	}
	t := &accountTable{index: make([]acctEntry, size), mask: size - 1, shift: shift, meta: make([]acctMeta, maxAccounts), n: 1}
	adviseHuge(unsafe.Pointer(&t.index[0]), uintptr(size)*unsafe.Sizeof(acctEntry{}))
	return t
}

func (t *accountTable) home(id uint64) uint64 { return (id * 0x9E3779B97F4A7C15) >> t.shift }

// lookup returns id's info (slot, flags, ledger), or false if id was never
// inserted. The system account's id 0 is slot 0.
func (t *accountTable) lookup(id uint64) (uint64, bool) {
	if id == SystemAccount {
		return 0, true
	}
	for i := t.home(id); ; i = (i + 1) & t.mask {
		switch t.index[i].id.Load() {
		case id:
			return t.index[i].info.Load(), true
		case 0:
			return 0, false
		}
	}
}

// slot returns id's slot, or false if id was never inserted.
func (t *accountTable) slot(id uint64) (uint64, bool) {
	info, ok := t.lookup(id)
	return infoSlot(info), ok
}

// peek returns id's slot if its entry is at its home, else 0: a guess
// cheap enough for the Transactor's touch ahead of execute.
func (t *accountTable) peek(id uint64) uint64 {
	s, _ := t.peekSlot(id)
	return s
}

// peekSlot returns id's slot and true if its entry is at its home.
func (t *accountTable) peekSlot(id uint64) (uint64, bool) {
	e := &t.index[t.home(id)]
	if e.id.Load() != id {
		return 0, false
	}
	return infoSlot(e.info.Load()), true
}

// peekHome loads id's home entry (touch's first round).
func (t *accountTable) peekHome(id uint64) uint64 { return t.index[t.home(id)].id.Load() }

// full reports whether every slot is taken.
func (t *accountTable) full() bool { return t.n == uint64(len(t.meta)) }

// find returns the index of id's entry and true, or that of the empty
// entry ending its probe and false (where insertAt puts id).
func (t *accountTable) find(id uint64) (uint64, bool) {
	for i := t.home(id); ; i = (i + 1) & t.mask {
		switch t.index[i].id.Load() {
		case id:
			return i, true
		case 0:
			return i, false
		}
	}
}

// insert gives m (whose id is not in the table, and not 0) the next slot.
// The caller checked full.
func (t *accountTable) insert(m acctMeta) uint64 {
	i, _ := t.find(m.id)
	return t.insertAt(i, m)
}

// insertAt gives m the next slot, its entry at index i, the empty entry
// find returned for m.id (no insert since). The caller checked full.
//
// The entry's words are release stores (ringbuf.StoreRelease, a plain
// store on amd64), the id last: readers load the id, then the info,
// atomically, which is message passing, so release is enough, as for the
// readable cells (Ledger.storeCell). sync/atomic's store is a locked XCHG
// on amd64, a tenth of a replay that creates its accounts.
func (t *accountTable) insertAt(i uint64, m acctMeta) uint64 {
	s := t.n
	t.meta[s] = m
	t.n++
	ringbuf.StoreRelease(&t.index[i].info, packInfo(s, &m))
	ringbuf.StoreRelease(&t.index[i].id, m.id) // last: publishes the entry
	return s
}

// setClosed sets or clears the Closed bit of slot s's index entry (a
// closing transfer closes an account, its void opens it again). Only the
// Transactor (or recovery) calls it; the metadata keeps the flags the
// account was created with.
func (t *accountTable) setClosed(s uint64, on bool) {
	id := t.meta[s].id
	for i := t.home(id); ; i = (i + 1) & t.mask {
		switch t.index[i].id.Load() {
		case 0:
			return // not inserted (cannot happen: s < n)
		case id:
			info := t.index[i].info.Load() &^ (uint64(Closed) << 28)
			if on {
				info |= uint64(Closed) << 28
			}
			t.index[i].info.Store(info)
			return
		}
	}
}

// cellsPerAccount is the number of cells per account slot.
const cellsPerAccount = uint64(numColumns)

// cell returns the index of slot s's column c in the balances.
func cell(s uint64, c Column) uint64 { return s*cellsPerAccount + uint64(c) }

// newCells allocates the cells of maxAccounts accounts (the readable
// balances), in huge pages where the kernel allows.
func newCells(maxAccounts uint64) []atomic.Int64 {
	c := make([]atomic.Int64, cellsPerAccount*maxAccounts)
	adviseHuge(unsafe.Pointer(&c[0]), uintptr(len(c))*8)
	return c
}
