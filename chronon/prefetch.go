package chronon

import (
	"reflect"
	"slices"
	"unsafe"
)

// minPrefetch is the fewest bytes of listed lines for which step
// prefetches: below it the units' state stays in a core's L2 and the
// prefetches are only instructions (BenchmarkScale at 100 units, 0.3 MB
// listed: 15% slower with them; at 1,000 units, 2.8 MB: 11% faster).
const minPrefetch = 1 << 20

// maxPrefetchLines bounds a unit's list: a unit with many ports would
// otherwise prefetch more than the fill buffers take at once, and push out
// of L1 (768 lines) what the unit ticking meanwhile uses. The first lines
// listed are kept: the unit's record, then its ports in declaration order.
const maxPrefetchLines = 64

// planPrefetch lists, for each unit in plan order, the cache lines at
// fixed addresses that the next unit's Tick touches: its unitState, the
// first line of the unit, and what its ports' sends and receives read (see
// the ports' footprint). step prefetches them before the unit before it
// ticks. In a model larger than the caches a unit's lines are a chain of
// dependent misses (unit, port, connection, lane, ring), each waiting for
// the one before; prefetched a unit ahead, they arrive together while the
// unit before runs. Slots are left out: which one a push or a pop touches
// moves with the tickets.
func (s *Simulation) planPrefetch() {
	s.pf = nil
	n := len(s.order)
	if n < 2 || s.sleep != nil { // the sleeping scheduler does not step
		return
	}
	var all []uintptr
	at := make([]int, n+1)
	for i := range n {
		u := s.order[(i+1)%n]
		start := len(all)
		see := func(p unsafe.Pointer, size uintptr) {
			if p == nil || size == 0 {
				return
			}
			for a := uintptr(p) &^ (cacheLine - 1); a < uintptr(p)+size; a += cacheLine {
				all = append(all, a)
			}
		}
		see(unsafe.Pointer(u), unsafe.Offsetof(u.ctrs))
		if v := reflect.ValueOf(u.unit); v.Kind() == reflect.Pointer {
			see(v.UnsafePointer(), 1)
		}
		for _, o := range u.outs {
			o.footprint(see)
		}
		for _, in := range u.ins {
			in.footprint(see)
		}
		all = all[:min(len(all), start+maxPrefetchLines)]
		slices.Sort(all[start:])
		all = append(all[:start], slices.Compact(all[start:])...)
		at[i+1] = len(all)
	}
	if len(all)*cacheLine < minPrefetch {
		return
	}
	s.pf = make([][]uintptr, n)
	for i := range n {
		s.pf[i] = all[at[i]:at[i+1]:at[i+1]]
	}
}
