package ledger

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIDTableModel: random puts, gets and deletes of ids clustered as
// TxIDs are (and a few far apart) against a Go map, through growth, with
// the table's own invariant checked: every entry is reachable from its home
// without crossing an empty slot.
func TestIDTableModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	tab := newIDTable[uint64]()
	want := map[uint64]uint64{}
	key := func() uint64 {
		if rng.IntN(50) == 0 {
			return 1 + rng.Uint64()
		}
		return 1 + rng.Uint64N(5000)
	}
	for step := range 200_000 {
		k := key()
		switch rng.IntN(3) {
		case 0:
			tab.put(k, uint64(step))
			want[k] = uint64(step)
		case 1:
			tab.del(k)
			delete(want, k)
		default:
			v, ok := tab.get(k)
			w, wok := want[k]
			require.Equal(t, wok, ok, "step %d key %d", step, k)
			require.Equal(t, w, v, "step %d key %d", step, k)
		}
		if step%20_000 == 0 {
			require.Equal(t, len(want), tab.len())
			got := map[uint64]uint64{}
			tab.each(func(id, v uint64) { got[id] = v })
			require.Equal(t, want, got)
			mask := uint64(len(tab.slots) - 1)
			for i, s := range tab.slots {
				if s.id == 0 {
					continue
				}
				for j := tab.home(s.id); j != uint64(i); j = (j + 1) & mask {
					require.NotZero(t, tab.slots[j].id, "entry %d at %d crosses an empty slot %d", s.id, i, j)
				}
			}
		}
	}
	c := tab.clone()
	c.put(1<<63, 1)
	_, ok := tab.get(1 << 63)
	require.False(t, ok, "a clone is a copy")
}
