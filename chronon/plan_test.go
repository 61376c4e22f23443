package chronon

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanClustersAndLinks checks the build products a parallel engine
// reuses: zero-delay clusters, their tick order and per-pair minimum delays.
func TestPlanClustersAndLinks(t *testing.T) {
	us := make([]*unitState, 6)
	for i := range us {
		us[i] = &unitState{index: i, name: string(rune('a' + i))}
	}
	e := func(from, to int, d uint64) *edge {
		return &edge{from: us[from], to: us[to], delay: d, name: us[from].name + "->" + us[to].name}
	}
	// Clusters {a, b, c} (c -> b -> a with zero delay), {d, e}, {f}.
	edges := []*edge{
		e(2, 1, 0), e(1, 0, 0),
		e(3, 4, 0),
		e(0, 3, 3), e(1, 4, 2), // cluster 0 -> cluster 1: min 2
		e(4, 2, 1), // cluster 1 -> cluster 0: 1
		e(5, 5, 1), // a delayed self-loop is fine
		e(0, 1, 4), // intra-cluster delayed edge: no link
	}
	p, err := newPlan(len(us), edges)
	require.NoError(t, err)
	pos := make([]int, len(us))
	for i, u := range p.order {
		pos[u] = i
	}
	for _, x := range edges {
		if x.delay == 0 {
			assert.Less(t, pos[x.from.index], pos[x.to.index], "zero-delay edge %s points forward", x.name)
		}
	}
	assert.Equal(t, p.cluster[0], p.cluster[1])
	assert.Equal(t, p.cluster[1], p.cluster[2])
	assert.Equal(t, p.cluster[3], p.cluster[4])
	assert.NotEqual(t, p.cluster[0], p.cluster[3])
	assert.NotEqual(t, p.cluster[5], p.cluster[3])
	require.Len(t, p.clusters, 3)
	abc, de := p.cluster[0], p.cluster[3]
	assert.Equal(t, []int{2, 1, 0}, p.clusters[abc], "in tick order")
	assert.ElementsMatch(t, []link{{from: abc, to: de, minDelay: 2}, {from: de, to: abc, minDelay: 1}}, p.links)
}
