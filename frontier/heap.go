package frontier

// hentry is one lane head in the consumer's heap. src is the lane's rank in
// (connID, laneID) order, so (arrive, src) is the merge key.
type hentry struct {
	arrive uint64
	src    int32
}

func (a hentry) less(b hentry) bool {
	return a.arrive < b.arrive || a.arrive == b.arrive && a.src < b.src
}

// minHeap is a binary min-heap of lane heads, typed so that no operation
// boxes an element in an interface. Its backing array is sized when lanes
// are registered; it holds at most one entry per lane and never grows after.
// Removing the top, with its sift-down, is Merger.heapPop's, so that a pop
// makes no call.
type minHeap struct {
	e []hentry
}

// push adds x, which must not be in the heap.
func (h *minHeap) push(x hentry) {
	// Within capacity: one entry per lane at most. Reslicing h.e in place
	// stores only its length: no write barrier, no call.
	h.e = h.e[:len(h.e)+1]
	e := h.e
	i := uint(len(e) - 1)
	for i > 0 {
		p := (i - 1) / 2
		if !x.less(e[p]) {
			break
		}
		e[i] = e[p]
		i = p
	}
	e[i] = x
}
