package frontier

// item is one message in a lane or a consumer-private queue.
type item[T any] struct {
	arrive uint64
	v      T
}
