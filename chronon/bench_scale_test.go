package chronon_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// scaleNode drains its input and sends one message on each of its four
// outputs every cycle.
type scaleNode struct {
	chronon.Base
	In  chronon.InPort[uint64]
	Out [4]chronon.NoCancelOutPort[uint64]
	sum uint64
}

func (n *scaleNode) Tick() {
	var v uint64
	for n.In.TryReceiveInto(&v) {
		n.sum += v
	}
	c := n.Cycle()
	for i := range n.Out {
		n.Out[i].Send(c)
	}
}

// scaleModel is units scaleNodes, each output connected to a random unit
// (delay 1 to 3, capacity 4), so every unit receives on a fan-in of about
// four connections: the per-unit state of a large model.
func scaleModel(tb testing.TB, units int) *chronon.Simulation {
	s := chronon.New()
	ns := make([]*scaleNode, units)
	for i := range ns {
		ns[i] = &scaleNode{}
		require.NoError(tb, s.Add(fmt.Sprint("n", i), ns[i]))
	}
	r := uint64(units)
	for _, n := range ns {
		for j := range n.Out {
			r = mix(r)
			to := int(r % uint64(units))
			require.NoError(tb, chronon.Connect(&n.Out[j], &ns[to].In, chronon.Delay(1+int(r>>32%3)), chronon.Capacity(4), chronon.Rate(1)))
		}
	}
	require.NoError(tb, s.Build())
	return s
}

// BenchmarkScale runs scaleModel sequentially at 10, 100, 1,000 and 10,000
// units; ns/unit-cycle is the cost the bar compares (10k at most
// 3x 100). The timed cycles start in steady state: after 256 cycles (every
// lane filled and drained many times) and a garbage collection of what
// Build left behind, so that a short run (about 50 timed cycles at 10,000
// units) measures the same cycles as a long one. With 64 warm-up cycles
// and no collection, runs of 50, 98 and 112 cycles at 10,000 units
// measured 2,825, 2,016 and 1,457 ns a unit-cycle on a quiet machine.
func BenchmarkScale(b *testing.B) {
	for _, units := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprint("units=", units), func(b *testing.B) {
			s := scaleModel(b, units)
			require.NoError(b, s.Run(256))
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			if err := s.Run(uint64(b.N)); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(units), "ns/unit-cycle")
		})
	}
}
