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
