package chronon

import "github.com/lanework/lanework/frontier"

// fanIn is the deterministic merge behind an InPort with more than one
// connection, ordering messages by (arrive, connection id). It is used
// concretely, not through an interface: the receive path calls it every
// cycle.
type fanIn[T any] = frontier.Merger[msg[T]]

// newFanIn returns a merge with one lane per connection id, of the given
// depths.
func newFanIn[T any](ids []uint64, depths []int) (*fanIn[T], []*frontier.Lane[msg[T]], error) {
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
