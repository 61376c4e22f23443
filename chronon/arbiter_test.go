package chronon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// TestArbiterAgainstScan compares both arbiters with a scan of the
// requesters from the one with the highest priority, on random requests.
func TestArbiterAgainstScan(t *testing.T) {
	for _, n := range []int{1, 3, 7, 63, 64} {
		fixed, err := chronon.NewFixedArbiter(n)
		require.NoError(t, err)
		rr, err := chronon.NewRoundRobinArbiter(n)
		require.NoError(t, err)
		next := 0
		r := uint64(n)
		for range 3000 {
			r = mix(r)
			req := r & mix(r+1) // about a quarter of the bits, and bits past n
			scan := func(from int) int {
				for j := range n {
					if i := (from + j) % n; req>>i&1 == 1 {
						return i
					}
				}
				return -1
			}
			require.Equal(t, scan(0), fixed.Grant(req), "n=%d req %x", n, req)
			want := scan(next)
			require.Equal(t, want, rr.Grant(req), "n=%d req %x next %d", n, req, next)
			if want >= 0 {
				next = (want + 1) % n
			}
			require.Equal(t, next, rr.Next())
		}
	}
}

// TestRoundRobinIsFair: requesters that always request are served in turn.
func TestRoundRobinIsFair(t *testing.T) {
	a, err := chronon.NewRoundRobinArbiter(5)
	require.NoError(t, err)
	var got []int
	for range 7 {
		got = append(got, a.Grant(0b11011))
	}
	assert.Equal(t, []int{0, 1, 3, 4, 0, 1, 3}, got)
	a.Advance(3)
	assert.Equal(t, 4, a.Grant(0b11111))
	assert.Equal(t, -1, a.Grant(0))
	assert.Equal(t, 0, a.Next(), "no grant, no move")
}

func TestArbiterSize(t *testing.T) {
	for _, n := range []int{0, -1, 65} {
		_, err := chronon.NewFixedArbiter(n)
		assert.ErrorIs(t, err, chronon.ErrTopology, "n=%d", n)
		_, err = chronon.NewRoundRobinArbiter(n)
		assert.ErrorContains(t, err, "an arbiter has 1 to 64 requesters", "n=%d", n)
	}
}
