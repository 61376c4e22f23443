package chronon

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestComponents: Tarjan's components of a graph with a 3-cycle feeding a
// 2-cycle, and an isolated vertex.
func TestComponents(t *testing.T) {
	comp, n := components([][]int{{1}, {2}, {0, 3}, {4}, {3}, nil})
	require.Equal(t, 3, n)
	assert.Equal(t, comp[0], comp[1])
	assert.Equal(t, comp[0], comp[2])
	assert.Equal(t, comp[3], comp[4])
	assert.NotEqual(t, comp[0], comp[3])
	assert.NotEqual(t, comp[5], comp[0])
	assert.NotEqual(t, comp[5], comp[3])
}

// TestTrailCut: clusters 0 and 1 in a delay-1 loop feed 2 and 3 by delay-1
// edges, which answer by delay-5 edges. With lookahead 8 the sinks of the
// short edges are {2} and {3}; together they balance the load best, so
// they trail, 4 cycles behind at most; the workers drift apart. When the
// answers take one cycle, nothing can trail.
func TestTrailCut(t *testing.T) {
	sim := func(back uint64) *Simulation {
		return &Simulation{lookahead: 8, plan: plan{
			clusters: [][]int{{0}, {1}, {2}, {3}},
			links: []link{
				{0, 1, 1}, {1, 0, 1}, {1, 2, 1}, {1, 3, 1}, {2, 0, back}, {3, 0, back},
			},
		}}
	}
	one := func(int) int64 { return 1 }
	s := sim(5)
	part := trailCut(s, 2, one)
	require.Equal(t, [][]int{{0, 1}, {2, 3}}, part)
	assert.Equal(t, [][]uint64{{8, 1}, {5, 8}}, workerLags(s, part))
	assert.True(t, drifts(s, part))
	assert.Equal(t, part, trailCut(s, 8, one), "two workers, whatever was asked for")

	// A heavy cluster 3 trails alone: 5 against 3 on the leader, where with
	// 2 beside it the trailer would carry 6.
	heavy := func(cl int) int64 { return map[int]int64{3: 4}[cl] + 1 }
	assert.Equal(t, [][]int{{0, 1, 2}, {3}}, trailCut(s, 2, heavy))

	assert.Nil(t, trailCut(sim(1), 2, one))
	assert.False(t, drifts(sim(1), partition(s.plan.clusters, 2, one)))
}
