package frontier

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPropertyAgainstModel drives the merger and the reference model with
// the same random traffic: fixed per-lane delays (so arrive cycles are
// monotonic per lane, as in the simulator), same-cycle ties, duplicate
// connection ids, full lanes and pops of part of what is ready. Every
// answer must match the model, and the whole pop sequence must equal every
// accepted message stably sorted by key.
func TestPropertyAgainstModel(t *testing.T) {
	for _, lanes := range []int{1, 2, 16, 31, 32, 33, 64, 256, 1000} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("lanes=%d/seed=%d", lanes, seed), func(t *testing.T) {
				propertyRun(t, lanes, rand.New(rand.NewPCG(seed, uint64(lanes))))
			})
		}
	}
}

func propertyRun(t *testing.T, lanes int, rng *rand.Rand) {
	m := New[int]()
	ref := newRefModel(0)
	var ls []*Lane[int]
	delay := make([]uint64, lanes)
	for i := range lanes {
		conn := uint64(rng.IntN(lanes/2 + 1))
		depth := 1 + rng.IntN(8)
		l, err := m.AddLane(conn, depth)
		require.NoError(t, err)
		ls = append(ls, l)
		ref.addLane(conn, depth)
		delay[i] = uint64(rng.IntN(6))
	}
	var accepted []keyed
	var got []popped
	overflows := uint64(0)
	v := 0
	cycles := 40 + rng.IntN(40)
	hot := rng.IntN(lanes) // one lane gets most of the traffic
	for c := range uint64(cycles) {
		pushes := rng.IntN(2*lanes/3 + 3)
		for range pushes {
			i := rng.IntN(lanes)
			if rng.IntN(3) == 0 {
				i = hot
			}
			arrive := c + delay[i]
			ok := ls[i].TryPush(arrive, v)
			require.Equal(t, ref.mustFit(i), ok)
			if ok {
				ref.push(i, arrive, v)
				accepted = append(accepted, keyed{arrive, ls[i].connID, i, v})
			} else {
				overflows++
			}
			v++
		}
		ma, mok := m.MinArrivalCycle()
		ra, rok := ref.minArrival()
		require.Equal(t, rok, mok)
		require.Equal(t, ra, ma)
		require.Equal(t, ref.hasReady(c), m.HasReady(c))
		require.Equal(t, ref.empty(), m.Empty())
		pops := rng.IntN(lanes + 4)
		if rng.IntN(4) == 0 {
			pops = 1 << 30 // everything ready
		}
		for range pops {
			val, a, ok := m.TryPop(c)
			want, wok := ref.pop(c)
			require.Equal(t, wok, ok)
			if !ok {
				break
			}
			require.Equal(t, want, popped{a, val})
			got = append(got, want)
		}
	}
	for {
		val, a, ok := m.TryPop(^uint64(0))
		if !ok {
			break
		}
		got = append(got, popped{a, val})
	}
	require.True(t, m.Empty())
	require.Equal(t, overflows, m.Overflows())
	equalSeq(t, sortedRef(accepted), got)
}
