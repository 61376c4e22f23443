package frontier

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync/atomic"
	"unsafe"

	"github.com/lanework/lanework/ringbuf"
)

var (
	// ErrStarted is returned by AddLane once any lane has been pushed to:
	// the set of lanes, and so the merge order, is fixed from then on.
	ErrStarted = errors.New("frontier: lane registered after the first push")

	// ErrDepth is returned by AddLane for a lane depth below 1 or above
	// ringbuf.MaxCapacity. The error also matches ringbuf.ErrCapacity.
	ErrDepth = errors.New("frontier: lane depth out of range")

	// ErrCapacity is returned by NewBounded for a capacity below 1 or above
	// ringbuf.MaxCapacity.
	ErrCapacity = errors.New("frontier: capacity out of range")

	// ErrTooManyLanes is returned by AddLane past math.MaxInt32 lanes.
	ErrTooManyLanes = errors.New("frontier: too many lanes")
)

// A Merger is the single consumer of a set of lanes. It pops messages in
// (arrive, connID, laneID) order among the ready lane heads; see the package
// documentation for the exact guarantee.
//
// A Merger is created with New or NewBounded, gets its lanes from AddLane,
// and is then used by one consumer goroutine while each lane is pushed to by
// its own producer goroutine.
type Merger[T any] struct {
	// A scan-mode pop reads the flags, counts and tables below, and for
	// the first four lanes just three lines of them: the 24 bytes here
	// with rings[0:4], heads[0:4], and hd[0:4]. A merger is per-receiver
	// working set, which sets a large model's cost per receive; with the
	// flags at the end, and the tables at offsets that split them across
	// lines, a pop read seven. The tables stay apart, eight bytes per
	// lane, so that indexing one by a variable rank is a scaled address.
	bounded  bool
	heapMode bool
	known    uint32
	spills   int // sources whose spill is non-empty
	nscan    int

	// Scan mode: rings[s] is the ring of the lane of rank s (its position
	// in (connID, laneID) order), for s below the lane count rounded up to
	// a multiple of 4 (nscan); the slots past the last lane hold an empty
	// ring nobody pushes to, so that the scan reads whole groups of four
	// lanes. Bit s of known says heads[s] is the arrive cycle of the head
	// of lane s, which only the consumer can change; hd[s] is the ring's
	// head ticket, which only the consumer moves, mirrored here so that
	// the scan reads one line per lane (the producer's tail) instead of
	// two.
	rings [heapThreshold]*ringbuf.SPSC[item[T]]
	heads [heapThreshold]uint64
	hd    [heapThreshold]uint64
	pad   *ringbuf.SPSC[item[T]]

	// Consumer state, indexed by rank.
	srcs []source[T]
	// Heap mode: hot[s] is what a pop or a refresh touches of the lane of
	// rank s, 16 bytes per lane so that indexing is a shift.
	hot    []hotLane[T]
	heap   minHeap
	notify notifier

	fifo     queue[T]
	capacity int
	budget   int    // admissions left in the current receiver cycle
	cycle    uint64 // the current receiver cycle, set by PrepareCycle

	scratch []uint64 // FlushIf's per-lane drop bitmap, sized at registration

	// Registration state.
	lanes  []*Lane[T] // by laneID
	byRank []*Lane[T]

	_       [cacheLine]byte
	started atomic.Bool // written once by a producer
}

// source is the consumer's private view of one lane.
type source[T any] struct {
	ring *ringbuf.SPSC[item[T]]
	// spill holds messages the consumer already took out of the ring but
	// has not delivered; they precede everything still in the ring. Only
	// FlushIf fills it (see flushLane).
	spill queue[T]
}

// hotLane is the heap mode's per-lane consumer state.
type hotLane[T any] struct {
	ring   *ringbuf.SPSC[item[T]]
	inHeap bool // the heap holds an entry for this lane
}

// New returns an empty merger with no aggregate capacity limit: each lane is
// bounded only by its own depth.
func New[T any]() *Merger[T] { return &Merger[T]{} }

// NewBounded returns an empty merger whose lanes drain into a receiver-owned
// FIFO of the given capacity, with at most capacity admissions per receiver
// cycle (see PrepareCycle). It returns an error matching ErrCapacity if
// capacity is below 1 or above ringbuf.MaxCapacity.
func NewBounded[T any](capacity int) (*Merger[T], error) {
	if capacity < 1 || capacity > ringbuf.MaxCapacity {
		return nil, fmt.Errorf("%w: %d (want 1..%d)", ErrCapacity, capacity, ringbuf.MaxCapacity)
	}
	return &Merger[T]{bounded: true, capacity: capacity, fifo: newQueue[T](capacity)}, nil
}

// AddLane registers a lane for the connection connID that holds depth
// messages, rounded up to a power of two. Lanes with equal connection ids
// are ordered by registration.
//
// It returns an error matching ErrDepth (and ringbuf.ErrCapacity) for a bad
// depth and ErrStarted once any lane has been pushed to. AddLane must not
// run concurrently with any other method of the merger or its lanes.
func (m *Merger[T]) AddLane(connID uint64, depth int) (*Lane[T], error) {
	if m.started.Load() {
		return nil, ErrStarted
	}
	if len(m.lanes) >= math.MaxInt32 {
		return nil, ErrTooManyLanes
	}
	r, err := ringbuf.NewSPSC[item[T]](depth)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDepth, err)
	}
	l := &Lane[T]{ring: r, started: &m.started, id: len(m.lanes), connID: connID}
	m.lanes = append(m.lanes, l)

	// The new lane has the largest laneID, so it goes after every lane
	// with a connID not above its own.
	rank := sort.Search(len(m.byRank), func(i int) bool { return m.byRank[i].connID > connID })
	m.byRank = slices.Insert(m.byRank, rank, l)
	m.srcs = slices.Insert(m.srcs, rank, source[T]{ring: r})
	m.hot = slices.Insert(m.hot, rank, hotLane[T]{ring: r})

	n := len(m.lanes)
	m.heap.e = make([]hentry, 0, n)
	if words := (r.Cap() + 63) / 64; words > len(m.scratch) {
		m.scratch = make([]uint64, words)
	}
	m.heapMode = n >= heapThreshold
	if !m.heapMode {
		m.setScanRings()
	} else {
		if (n+63)/64 != m.notify.n {
			m.notify = newNotifier(n)
		}
		for rk, x := range m.byRank {
			x.word, x.bit = m.notify.word(rk/64), 1<<(rk%64)
		}
	}
	return l, nil
}

// setScanRings lays out the scan's ring table after a registration.
func (m *Merger[T]) setScanRings() {
	m.nscan = (len(m.srcs) + 3) &^ 3
	for s := range m.nscan {
		if s < len(m.srcs) {
			m.rings[s] = m.srcs[s].ring
			continue
		}
		if m.pad == nil {
			m.pad, _ = ringbuf.NewSPSC[item[T]](1)
		}
		m.rings[s] = m.pad // tail 0 and hd 0 forever: never busy
		m.hd[s] = 0
	}
	m.syncHeads()
}

// Lanes returns the number of registered lanes.
func (m *Merger[T]) Lanes() int { return len(m.lanes) }

// Overflows returns the number of TryPush calls, over all lanes, that failed
// because the lane was full. It may be called from any goroutine; while
// producers run, the result is a snapshot.
func (m *Merger[T]) Overflows() uint64 {
	var n uint64
	for _, l := range m.lanes {
		n += l.overflows.Load()
	}
	return n
}

// Footprint calls see with the memory at fixed addresses that a pop reads:
// the merger's flags with the scan tables of its lanes (in heap mode, the
// lanes' hot state), and its lanes' ring headers (see
// ringbuf.SPSC.Footprint).
func (m *Merger[T]) Footprint(see func(p unsafe.Pointer, size uintptr)) {
	if m.heapMode {
		see(unsafe.Pointer(m), unsafe.Offsetof(m.rings))
		if len(m.hot) > 0 {
			see(unsafe.Pointer(&m.hot[0]), uintptr(len(m.hot))*unsafe.Sizeof(m.hot[0]))
		}
	} else {
		n := uintptr(m.nscan)
		see(unsafe.Pointer(m), unsafe.Offsetof(m.rings)+n*unsafe.Sizeof(m.rings[0]))
		see(unsafe.Pointer(&m.heads), n*unsafe.Sizeof(m.heads[0]))
		see(unsafe.Pointer(&m.hd), n*unsafe.Sizeof(m.hd[0]))
	}
	for _, l := range m.lanes {
		l.ring.Footprint(see)
	}
}
