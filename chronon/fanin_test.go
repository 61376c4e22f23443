package chronon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// twoInto builds a and b sending into one consumer k, a first in
// connection order, with the given options per connection.
func twoInto(t *testing.T, a, b *prod, k *cons, oa, ob []chronon.Option) *chronon.Simulation {
	t.Helper()
	s := chronon.New()
	require.NoError(t, s.Add("k", k))
	require.NoError(t, s.Add("a", a))
	require.NoError(t, s.Add("b", b))
	require.NoError(t, chronon.Connect(&a.Out, &k.In, oa...))
	require.NoError(t, chronon.Connect(&b.Out, &k.In, ob...))
	require.NoError(t, s.Build())
	return s
}

func offset(base int, n uint64) func(uint64) []int {
	return func(c uint64) []int {
		if c < n {
			return []int{base + int(c)}
		}
		return nil
	}
}

func TestFanInTiesByConnection(t *testing.T) {
	// b's edge is faster, but ties on arrive go to the earlier connection.
	a, b, k := &prod{plan: offset(100, 3)}, &prod{plan: offset(200, 3)}, &cons{}
	s := twoInto(t, a, b, k, []chronon.Option{chronon.Delay(2)}, []chronon.Option{chronon.Delay(1)})
	require.NoError(t, s.Run(6))
	assert.Equal(t, []got{{1, 200}, {2, 100}, {2, 201}, {3, 101}, {3, 202}, {4, 102}}, k.got)
}

func TestFanInBackPressurePerConnection(t *testing.T) {
	a, b, k := &prod{plan: offset(100, 6)}, &prod{plan: offset(200, 6)}, &cons{take: upTo(4, 1)}
	// Rate 2 keeps b's capacity-1 edge from being a flip-flop.
	s := twoInto(t, a, b, k, []chronon.Option{chronon.Capacity(2)}, []chronon.Option{chronon.Capacity(1), chronon.Rate(2)})
	require.NoError(t, s.Run(4))
	assert.Len(t, a.sent, 2)
	assert.Len(t, b.sent, 1)
	require.NoError(t, s.Run(4))
	// Each pop frees its own connection, from the next cycle.
	assert.Equal(t, []got{{4, 100}, {5, 200}, {6, 101}, {7, 105}}, k.got)
	assert.Equal(t, []got{{0, 200}}, b.sent, "b sends only while c < 6; its credit came in cycle 6")
}

func TestFanInFilterFlushCancel(t *testing.T) {
	// Filter: odd values are consumed and dropped.
	a, b := &prod{plan: offset(100, 4)}, &prod{plan: offset(200, 4)}
	k := &cons{keep: func(v *int) bool { return *v%2 == 0 }}
	s := twoInto(t, a, b, k, nil, nil)
	require.NoError(t, s.Run(6))
	assert.Equal(t, []got{{1, 100}, {1, 200}, {3, 102}, {3, 202}}, k.got)

	// Flush by key in cycle 3 over delay-3 edges: values sent in cycles
	// 0..2 are covered; those of a >= 101 and b >= 201 go.
	a, b = &prod{plan: offset(100, 5)}, &prod{plan: offset(200, 5)}
	k = &cons{take: upTo(3, 100), before: func(k *cons) {
		if k.Cycle() == 3 {
			n := k.In.FlushKeys(func(v *int) uint64 { return uint64(*v % 100) }, chronon.AtOrYounger(1))
			assert.Equal(t, 4, n)
		}
	}}
	s = twoInto(t, a, b, k, []chronon.Option{chronon.Delay(3)}, []chronon.Option{chronon.Delay(3)})
	require.NoError(t, s.Run(9))
	assert.Equal(t, []got{{3, 100}, {3, 200}, {6, 103}, {6, 203}, {7, 104}, {7, 204}}, k.got)

	// Flush all, then cancel on one connection only.
	a, b = &prod{}, &prod{plan: offset(200, 6)}
	a.plan = func(c uint64) []int {
		if c == 2 {
			a.Out.CancelInFlight() // reaches k in cycle 4
		}
		if c < 6 {
			return []int{100 + int(c)}
		}
		return nil
	}
	k = &cons{take: upTo(4, 100), before: func(k *cons) {
		if k.Cycle() == 1 {
			assert.Equal(t, 2, k.In.Flush(), "the messages of cycle 0")
		}
	}}
	s = twoInto(t, a, b, k, []chronon.Option{chronon.Delay(2)}, []chronon.Option{chronon.Delay(2)})
	require.NoError(t, s.Run(9))
	// In cycle 4 a's 101 (sent before the cancel, arrive 3) is discarded;
	// 102 was sent after the cancel; b is unaffected.
	assert.Equal(t, []got{{4, 201}, {4, 102}, {4, 202}, {5, 103}, {5, 203}, {6, 104}, {6, 204}, {7, 105}, {7, 205}}, k.got)
}
