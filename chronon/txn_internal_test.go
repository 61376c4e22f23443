package chronon

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAdmitsNIsRepeatedAdmits checks admitsN against its definition:
// admits asked n times, with a push recorded after each, on random
// connection states (rate, capacity, flip-flop, pushes and credits of this
// and earlier cycles).
func TestAdmitsNIsRepeatedAdmits(t *testing.T) {
	r := uint64(7)
	next := func(n uint64) uint64 {
		r = r*6364136223846793005 + 1442695040888963407
		return (r >> 33) % n
	}
	const c = 100
	for range 20000 {
		k := &conn[uint64]{capacity: uint32(next(5)), rate: uint32(next(4)), pushCycle: none, popCycle: none}
		if next(4) == 0 {
			k.capacity, k.rate, k.dff = 1, 1, true
		}
		k.pushes = next(12)
		if next(2) == 0 && k.pushes > 0 {
			k.pushCycle = c
			k.cyclePushes = uint32(next(min(k.pushes, 3) + 1))
		} else if k.pushes > 0 {
			k.pushCycle = c - 1 - next(3)
		}
		k.pops = next(k.pushes + 1)
		if next(2) == 0 {
			k.popCycle = c
			k.popsBefore = k.pops - next(k.pops+1)
		}
		for n := range uint64(6) {
			sim := &conn[uint64]{capacity: k.capacity, rate: k.rate, dff: k.dff, pushes: k.pushes, cyclePushes: k.cyclePushes,
				pushCycle: k.pushCycle, pops: k.pops, popsBefore: k.popsBefore, popCycle: k.popCycle}
			want := true
			for range n {
				if !sim.admits(c) {
					want = false
					break
				}
				sim.record(c)
			}
			require.Equal(t, want, k.admitsN(c, n), "capacity %d rate %d dff %v pushes %d (%d in cycle %d) pops %d (%d before cycle %d), n=%d",
				k.capacity, k.rate, k.dff, k.pushes, k.cyclePushes, k.pushCycle, k.pops, k.popsBefore, k.popCycle, n)
		}
	}
}
