package chronon_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// tokenNode holds tokens: it works on one for 1 to 16 cycles, then passes
// it on, on one of its two outputs, and sleeps until the next token
// arrives. With a few tokens among many nodes, most nodes sleep.
type tokenNode struct {
	chronon.Base
	In     chronon.InPort[uint64]
	Out    [2]chronon.OutPort[uint64]
	self   bool // tick every cycle and check for itself instead of sleeping
	asleep bool
	tok    uint64
	has    bool
	left   uint64
	digest uint64
}

// sleepyToken is a tokenNode that sleeps.
type sleepyToken struct{ tokenNode }

func (*sleepyToken) MaySleep() {}

func (n *tokenNode) Tick() {
	if n.asleep {
		if !n.In.Ready() {
			return
		}
		n.asleep = false
	}
	c := n.Cycle()
	if !n.has {
		if !n.In.TryReceiveInto(&n.tok) {
			n.sleep()
			return
		}
		n.has, n.left = true, 1+n.tok%16
	}
	n.digest = mix(n.digest ^ n.tok ^ c)
	if n.left--; n.left == 0 && n.Out[n.tok>>8%2].Send(mix(n.tok)) {
		n.has = false
		n.sleep()
	}
}

func (n *tokenNode) sleep() {
	if n.self {
		n.asleep = true
	} else {
		n.SleepUntilReceive()
	}
}

// tokenModel is units tokenNodes, one in every 100 holding a token, each
// output to a random node (delay 1 to 3, rate 1), so that about 1% of the
// nodes are awake in a cycle. With self, every node ticks every cycle.
func tokenModel(tb testing.TB, units int, self bool) (*chronon.Simulation, []*tokenNode) {
	s := chronon.New()
	ns := make([]*tokenNode, units)
	for i := range ns {
		var u chronon.Unit
		if self {
			ns[i] = &tokenNode{self: true}
			u = ns[i]
		} else {
			st := &sleepyToken{}
			ns[i], u = &st.tokenNode, st
		}
		if i%100 == 0 {
			ns[i].tok, ns[i].has, ns[i].left = uint64(i), true, 1
		}
		require.NoError(tb, s.Add(fmt.Sprint("n", i), u))
	}
	r := uint64(units)
	for _, n := range ns {
		for j := range n.Out {
			r = mix(r)
			to := int(r % uint64(units))
			require.NoError(tb, chronon.Connect(&n.Out[j], &ns[to].In, chronon.Delay(1+int(r>>32%3)), chronon.Rate(1)))
		}
	}
	require.NoError(tb, s.Build())
	return s, ns
}

func tokenDigest(ns []*tokenNode) uint64 {
	var d uint64
	for _, n := range ns {
		d = mix(d ^ n.digest)
	}
	return d
}

// TestTokenModelIdentical: the benchmark's sleeping model and its
// every-cycle version end in the same state, with any worker count.
func TestTokenModelIdentical(t *testing.T) {
	units, cycles := 2000, uint64(3000)
	if raceEnabled {
		units, cycles = 500, 800
	}
	ref, rns := tokenModel(t, units, true)
	require.NoError(t, ref.Run(cycles))
	want := tokenDigest(rns)
	for _, w := range []int{1, 2, 3, 4, 8} {
		s, ns := tokenModel(t, units, false)
		s.SetParallelThreshold(0)
		require.NoError(t, s.SetWorkers(w))
		require.NoError(t, s.Run(cycles))
		require.Equal(t, want, tokenDigest(ns), "%d workers", w)
		require.Equal(t, cycles, s.Cycle())
	}
}

// BenchmarkSleeping runs the 10,000-node token model with sleeping nodes
// and with every node ticking every cycle, sequentially, and the sleeping
// one on the parallel engine with 2 workers (uncalibrated); ns/op is per
// simulated cycle.
func BenchmarkSleeping(b *testing.B) {
	for _, tc := range []struct {
		name    string
		self    bool
		workers int
	}{{"sleeping", false, 1}, {"ticking", true, 1}, {"sleeping-parallel", false, 2}} {
		b.Run(tc.name, func(b *testing.B) {
			s, ns := tokenModel(b, 10000, tc.self)
			s.SetParallelThreshold(0)
			require.NoError(b, s.SetWorkers(tc.workers))
			require.NoError(b, s.Run(256))
			b.ReportAllocs()
			b.ResetTimer()
			if err := s.Run(uint64(b.N)); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			awake := 0
			for _, n := range ns {
				if n.has {
					awake++
				}
			}
			b.ReportMetric(float64(awake), "awake")
		})
	}
}
