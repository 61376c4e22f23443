package chronon

// unionFind groups indexes 0..n-1 into sets. A set's root is its smallest
// member, so grouping does not depend on the order of union calls.
type unionFind []int

func newUnionFind(n int) unionFind {
	u := make(unionFind, n)
	for i := range u {
		u[i] = i
	}
	return u
}

// find returns x's root, halving the path as it goes.
func (u unionFind) find(x int) int {
	for u[x] != x {
		u[x] = u[u[x]]
		x = u[x]
	}
	return x
}

// union merges the sets of a and b.
func (u unionFind) union(a, b int) {
	if a, b = u.find(a), u.find(b); a != b {
		u[max(a, b)] = min(a, b)
	}
}
