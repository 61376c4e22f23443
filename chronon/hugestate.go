package chronon

import "unsafe"

// hugePage is the size of an x86-64 (and common arm64) transparent huge page.
const hugePage = 2 << 20

// Bounds of the span collapseState collapses: at least minHugeSpan (below
// that the state fits the TLB's reach with small pages), and at most
// hugeSpanPerConn bytes per connection (beyond that the span holds mostly
// memory that is not the simulation's, which collapsing would make
// resident for nothing).
const (
	minHugeSpan     = 8 << 20
	hugeSpanPerConn = 4 << 10
)

// collapseState asks for huge pages under the simulation's per-connection
// state (Build, after the lanes are made). A step of a large model visits
// its connections in an order unrelated to their addresses: in a model of
// 10,000 units and 40,000 connections (about 80 MB) nearly every message
// also missed the TLB with 4 KiB pages, and with the heap in huge pages a
// unit-cycle cost 25% to 50% less (BenchmarkScale, docs/chronon.md). Go's
// heap does not use huge pages unless the system enables them for all
// memory, so Build collapses the span from the lowest to the highest
// address of the simulation's units, connections, lanes and merges, which
// were allocated together, into huge pages (see collapseHuge). The span
// also holds the lanes' slots and whatever else was allocated meanwhile;
// collapsing changes no memory's contents.
func (s *Simulation) collapseState() {
	lo, hi, conns := stateSpan(s)
	if hi > lo && hi-lo >= minHugeSpan && hi-lo <= uintptr(conns)*hugeSpanPerConn {
		collapseHuge(lo, hi)
	}
}

// stateSpan returns the lowest and the highest address (exclusive) of the
// simulation's units, connections, lanes and merges, and the number of
// connections.
func stateSpan(s *Simulation) (lo, hi uintptr, conns int) {
	lo = ^uintptr(0)
	see := func(p unsafe.Pointer, size uintptr) {
		if p != nil {
			lo, hi = min(lo, uintptr(p)), max(hi, uintptr(p)+size)
		}
	}
	for _, u := range s.units {
		see(unsafe.Pointer(u), unsafe.Sizeof(*u))
	}
	for _, in := range s.ins {
		conns += in.connCount()
		in.state(see)
	}
	return lo, hi, conns
}
