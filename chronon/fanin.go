package chronon

import "github.com/lanework/lanework/frontier"

// newFanIn returns a frontier merge with one lane per connection id, of the
// given depths.
func newFanIn[T any](ids []uint64, depths []int) (*frontier.Merger[msg[T]], []*frontier.Lane[msg[T]], error) {
	m := frontier.New[msg[T]]()
	lanes := make([]*frontier.Lane[msg[T]], len(ids))
	for i, id := range ids {
		l, err := m.AddLane(id, depths[i])
		if err != nil {
			return nil, nil, err
		}
		lanes[i] = l
	}
	return m, lanes, nil
}

// fanIn is the deterministic merge behind an InPort with more than one
// connection, ordering messages by (arrive, connection id): a
// frontier.Merger over SPSC lanes, or, when any connection comes from a
// shared broadcast ring, a cursorMerge over readers. It is used concretely,
// not through an interface. InPort.receive pops from fr or cm itself: a
// call through a method here would not inline and would copy the popped
// message once more.
type fanIn[T any] struct {
	fr *frontier.Merger[msg[T]]
	cm *cursorMerge[T]
}

func (f *fanIn[T]) HasReady(c uint64) bool {
	if f.cm != nil {
		return f.cm.HasReady(c)
	}
	return f.fr.HasReady(c)
}

func (f *fanIn[T]) FlushIf(drop func(uint64, *msg[T]) bool) int {
	if f.cm != nil {
		return f.cm.FlushIf(drop)
	}
	return f.fr.FlushIf(drop)
}
