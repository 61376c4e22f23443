package frontier

// queue is a consumer-private FIFO of items on a power-of-two array. It backs
// the bounded mode's shared FIFO (fixed size, never grows) and a lane's
// spill (see Merger.FlushIf).
type queue[T any] struct {
	buf  []item[T]
	head int // index of the front item
	n    int
}

func newQueue[T any](capacity int) queue[T] {
	c := 1
	for c < capacity {
		c <<= 1
	}
	return queue[T]{buf: make([]item[T], c)}
}

func (q *queue[T]) mask() int { return len(q.buf) - 1 }

// front returns the oldest item, or nil if q is empty.
func (q *queue[T]) front() *item[T] {
	if q.n == 0 {
		return nil
	}
	return &q.buf[q.head]
}

// pop removes the front item; q must not be empty.
func (q *queue[T]) pop() {
	q.buf[q.head] = item[T]{} // do not pin the payload
	q.head = (q.head + 1) & q.mask()
	q.n--
}

// push appends x. It grows the array only when q is full, which the bounded
// FIFO never lets happen.
func (q *queue[T]) push(x item[T]) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&q.mask()] = x
	q.n++
}

func (q *queue[T]) grow() {
	nb := make([]item[T], max(2*len(q.buf), 8))
	for i := range q.n {
		nb[i] = q.buf[(q.head+i)&q.mask()]
	}
	q.buf, q.head = nb, 0
}

// reset drops every item and returns how many there were.
func (q *queue[T]) reset() int {
	n := q.n
	clear(q.buf)
	q.head, q.n = 0, 0
	return n
}

// filter drops, in queue order, the items for which drop returns true,
// keeps the others in order, and returns the number dropped.
func (q *queue[T]) filter(drop func(arrive uint64, v *T) bool) int {
	m := q.mask()
	k := 0 // kept so far; kept items are compacted toward the front
	for i := range q.n {
		p := &q.buf[(q.head+i)&m]
		if drop(p.arrive, &p.v) {
			continue
		}
		if k != i {
			q.buf[(q.head+k)&m] = *p
		}
		k++
	}
	dropped := q.n - k
	for i := k; i < q.n; i++ {
		q.buf[(q.head+i)&m] = item[T]{}
	}
	q.n = k
	if k == 0 {
		q.head = 0
	}
	return dropped
}
