package chronon

import (
	"cmp"
	"slices"
)

// plan is what Build derives from the topology. The sequential engine ticks
// units in order. The parallel engine runs each cluster (units joined by
// zero-delay edges, which must tick in order within a cycle) as one
// schedulable item. The links would let cluster b run cycle c once every
// cluster a with a link a->b has finished cycle c-minDelay; the parallel
// engine uses the tighter rule "every cluster has finished c-1" (see
// engine.go), so links serve only diagnostics and tests today.
type plan struct {
	order    []int   // unit indexes; every zero-delay edge points forward
	cluster  []int   // cluster index of each unit
	clusters [][]int // units of each cluster, in tick order
	links    []link  // minimum delay per ordered pair of distinct clusters
}

type link struct {
	from, to int
	minDelay uint64
}

// newPlan orders n units so that every zero-delay edge points forward
// (Kahn's algorithm, O(n+e)), rejecting zero-delay cycles, and groups the
// units into clusters.
func newPlan(n int, edges []*edge) (plan, error) {
	// Zero-delay adjacency in compressed form.
	start := make([]int, n+1)
	for _, e := range edges {
		if e.delay == 0 {
			start[e.from.index+1]++
		}
	}
	for i := range n {
		start[i+1] += start[i]
	}
	next := slices.Clone(start[:n])
	adj := make([]*edge, start[n])
	indeg := make([]int, n)
	for _, e := range edges {
		if e.delay == 0 {
			adj[next[e.from.index]] = e
			next[e.from.index]++
			indeg[e.to.index]++
		}
	}
	order := make([]int, 0, n)
	for i := range n {
		if indeg[i] == 0 {
			order = append(order, i)
		}
	}
	for h := 0; h < len(order); h++ {
		u := order[h]
		for _, e := range adj[start[u]:start[u+1]] {
			v := e.to.index
			if indeg[v]--; indeg[v] == 0 {
				order = append(order, v)
			}
		}
	}
	if len(order) < n {
		return plan{}, findCycle(n, edges, indeg)
	}

	// Clusters: connected components of the zero-delay edges (union-find).
	uf := newUnionFind(n)
	for _, e := range edges {
		if e.delay == 0 {
			uf.union(e.from.index, e.to.index)
		}
	}
	p := plan{order: order, cluster: make([]int, n)}
	id := make(map[int]int)
	for _, u := range order {
		r := uf.find(u)
		c, ok := id[r]
		if !ok {
			c = len(p.clusters)
			id[r] = c
			p.clusters = append(p.clusters, nil)
		}
		p.cluster[u] = c
		p.clusters[c] = append(p.clusters[c], u)
	}
	best := make(map[[2]int]uint64)
	for _, e := range edges {
		a, b := p.cluster[e.from.index], p.cluster[e.to.index]
		if a == b {
			continue
		}
		if d, ok := best[[2]int{a, b}]; !ok || e.delay < d {
			best[[2]int{a, b}] = e.delay
		}
	}
	for k, d := range best {
		p.links = append(p.links, link{from: k[0], to: k[1], minDelay: d})
	}
	slices.SortFunc(p.links, func(x, y link) int {
		return cmp.Or(cmp.Compare(x.from, y.from), cmp.Compare(x.to, y.to))
	})
	return p, nil
}

// findCycle names one zero-delay cycle among the units Kahn's algorithm left
// (indeg > 0). Every such unit has a zero-delay predecessor that is also
// left, so walking predecessors must revisit a unit.
func findCycle(n int, edges []*edge, indeg []int) error {
	pred := make([]*edge, n) // one left-over zero-delay in-edge per unit
	for _, e := range edges {
		if e.delay == 0 && indeg[e.to.index] > 0 && indeg[e.from.index] > 0 && pred[e.to.index] == nil {
			pred[e.to.index] = e
		}
	}
	u := 0
	for indeg[u] == 0 {
		u++
	}
	pos := make(map[int]int)
	var walk []*edge
	for {
		if _, ok := pos[u]; ok {
			break
		}
		pos[u] = len(walk)
		e := pred[u]
		walk = append(walk, e)
		u = e.from.index
	}
	cyc := walk[pos[u]:]
	slices.Reverse(cyc)
	ce := &CycleError{}
	for _, e := range cyc {
		ce.Units = append(ce.Units, e.from.name)
		ce.Edges = append(ce.Edges, e.String())
	}
	return ce
}
