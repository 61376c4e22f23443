package chronon

import "github.com/lanework/lanework/frontier"

// newFanIn returns a frontier merge with one lane per connection id, of the
// given depths.
func newFanIn[T any](ids []uint64, depths []int) (*frontier.Merger[lmsg[T]], []*frontier.Lane[lmsg[T]], error) {
	m := frontier.New[lmsg[T]]()
	lanes := make([]*frontier.Lane[lmsg[T]], len(ids))
	for i, id := range ids {
		l, err := m.AddLane(id, depths[i])
		if err != nil {
			return nil, nil, err
		}
		lanes[i] = l
	}
	return m, lanes, nil
}
