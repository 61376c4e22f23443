package frontier

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type payload struct {
	p *int
	s string
}

// The push and pop paths, readiness queries and a selective flush that does
// not wrap allocate nothing, in scan and heap mode, bounded or not.
func TestNoAllocs(t *testing.T) {
	for _, lanes := range []int{16, 64, 256} {
		for _, capacity := range []int{0, 4} {
			t.Run(fmt.Sprintf("lanes=%d/cap=%d", lanes, capacity), func(t *testing.T) {
				m := New[payload]()
				if capacity > 0 {
					m, _ = NewBounded[payload](capacity)
				}
				ls := make([]*Lane[payload], lanes)
				for i := range ls {
					var err error
					ls[i], err = m.AddLane(uint64(i), 8)
					require.NoError(t, err)
				}
				x := 7
				v := payload{p: &x, s: "msg"}
				cycle := uint64(0)
				keep := func(_ uint64, p *payload) bool { return p.s != "" }
				drop := func(a uint64, _ *payload) bool { return a%2 == 0 }
				allocs := testing.AllocsPerRun(200, func() {
					cycle++
					for _, i := range []int{1, lanes / 3, 2 * lanes / 3, lanes - 1} {
						ls[i].TryPush(cycle, v)
					}
					m.PrepareCycle(cycle)
					m.HasReady(cycle)
					m.MinArrivalCycle()
					m.Empty()
					m.TryPop(cycle)
					m.PopFiltered(cycle, keep)
					m.FlushIf(drop)
					for {
						if _, _, ok := m.TryPop(cycle); !ok {
							break
						}
					}
					m.Flush()
				})
				assert.Zero(t, allocs)
			})
		}
	}
}
