package pressure

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// cacheLine is the padding unit: two 64-byte lines, because adjacent-line
// prefetching makes neighbouring lines contend on common x86 parts.
const cacheLine = 128

// Manager.state packs, so that every hot-path call learns all of it with one
// load: the Level in the low bits, the closed bit at the top, and between
// them a generation counted up by every rise to High. A stage's streak clock
// watches the generation, so a rise followed by another stage's lowering
// between two of its clock reads still restarts it (no ABA on the level).
const (
	levelMask = 3
	genOne    = 1 << 2
	genMask   = 1<<31 - genOne
	closedBit = 1 << 31
)

// isHigh reports whether st is an open manager's state at level High.
func isHigh(st uint32) bool { return st&(closedBit|levelMask) == uint32(High) }

// ErrClosed is returned by Register after Close.
var ErrClosed = errors.New("pressure: manager closed")

// Manager owns the pressure level of one pipeline and decides, for every
// registered stage that finds no work, whether it spins, yields or parks.
// Its methods are safe for concurrent use.
type Manager struct {
	_ [cacheLine]byte
	// Read-mostly line: state is loaded by every OnWork, OnEmpty and Wake
	// and written only when the level changes; the rest is written by
	// Register and Close alone.
	state    atomic.Uint32
	procs    atomic.Int32             // cached GOMAXPROCS, refreshed off the hot path
	stages   atomic.Pointer[[]*Stage] // copy-on-write list of registered stages
	nstages  atomic.Int32             // len(*stages)
	p        params
	strategy WaitStrategy
	clock    func() int64 // nanotime; replaced in tests
	_        [cacheLine]byte
	// spinners counts stages holding a spin slot. It is written only when a
	// stage that has been empty for a while takes or leaves a slot.
	spinners atomic.Int32
	_        [cacheLine - 4]byte
	// parked counts the stages that announced a park and have not woken
	// yet. Every Wake and OnWork loads it, so it has a line of its own that
	// sustained load does not write (stages with work do not park).
	parked atomic.Int32
	_      [cacheLine - 4]byte
	mu     sync.Mutex // serialises Register and Close
}

// Stats is a snapshot of a Manager's counters for metrics.
type Stats struct {
	Parks    uint64 // times a stage parked
	Unparks  uint64 // times a parked stage was woken (a stale token counts too)
	Yields   uint64 // times a stage yielded its P (runtime.Gosched)
	Level    Level  // current pressure level
	Stages   int    // registered stages
	Spinning int    // stages holding a spin slot right now
	Closed   bool   // whether Close has been called
}

// New returns a Manager for one pipeline, waiting with strategy s (an
// undefined strategy is taken as Balanced). The level starts at Idle, so
// stages that find nothing before the first work park (unless s is
// LowLatency).
func New(s WaitStrategy) *Manager {
	if int(s) >= len(strategyParams) {
		s = Balanced
	}
	m := &Manager{p: s.params(), strategy: s, clock: nanotime}
	m.procs.Store(int32(runtime.GOMAXPROCS(0)))
	m.stages.Store(new([]*Stage))
	return m
}

// Register returns the handle of a new stage named name. The handle belongs
// to one goroutine, which must register before its first OnEmpty; stages may
// register at any time, also after work has started. Register returns
// ErrClosed after Close.
func (m *Manager) Register(name string) (*Stage, error) {
	s := &Stage{m: m, name: name, wake: make(chan struct{}, 1)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state.Load()&closedBit != 0 {
		return nil, ErrClosed
	}
	old := *m.stages.Load()
	list := make([]*Stage, len(old), len(old)+1)
	copy(list, old)
	list = append(list, s)
	m.stages.Store(&list)
	m.nstages.Store(int32(len(list)))
	m.refreshProcs()
	return s, nil
}

// Wake tells the manager that work has been, or is about to be, made visible
// to a registered stage by a goroutine other than that stage. It moves the
// level to High; if the level was Idle it unparks every stage, and otherwise
// it unparks every stage that has announced a park.
//
// Call Wake after publishing work (required: a stage may be parked), and at an
// entry point also before (so parked stages wake while the item is on its
// way). When the level is already High and no stage is parked, Wake is a
// fence on a private word and two atomic loads: it writes no shared cache
// line.
func (m *Manager) Wake() {
	// Why no wakeup is lost: a Dekker handshake.
	//
	//  1. A stage parks in two OnEmpty calls. The first announces the park:
	//     it stores the stage's parking flag, then adds one to the parked
	//     count (A). The caller then polls its input (P); only the next
	//     OnEmpty parks. The announcement is withdrawn (flag, then count)
	//     only after the stage has woken or found work.
	//  2. A publisher stores the item (S), then loads the parked count here
	//     (W). The manager's words are sync/atomic, sequentially consistent
	//     in the Go memory model; S need not be: ringbuf publishes with a
	//     release store, a plain MOV on amd64 outside race builds. fence
	//     (a sequentially consistent read-modify-write) orders S before W
	//     all the same (see fence.go).
	//  3. If W sees a non-zero count, every flagged stage gets a wake token:
	//     a permit (chan struct{} of capacity 1, sent without blocking), so
	//     a token sent before the park makes the park return at once.
	//
	// Take a park that no token ends. If S precedes P, the poll sees the item
	// and the stage does not park. Otherwise A < P < S < W, so W sees A's
	// increment, not yet withdrawn, the flag stored before A is visible to
	// the later load of it, and the token is sent: a contradiction. Stage.Wake
	// loads its stage's flag directly as W; the flag is stored before A, so
	// the same argument holds. Extra tokens (several wakers, leaving Idle)
	// only make a later park return early, and the caller polls again.
	fence() // the caller's publication precedes our loads of level and parked
	if !isHigh(m.state.Load()) && m.raise() {
		return
	}
	m.unparkParked()
}

// WakeIfParked is Wake when a stage has announced a park; otherwise it is
// one atomic load of a word written only when a stage parks or wakes, with
// no fence and no effect on the level. Without the fence it may miss a park
// announced while the caller published, so a caller that uses it after a
// publication must still call Wake itself later: before it waits for
// another stage, when it stops, and every so often. A stage parked in that
// window then wakes at the latest at that Wake. For a publisher that
// publishes often while its consumers rarely park, it saves Wake's fence
// on most publications.
func (m *Manager) WakeIfParked() {
	if m.parked.Load() != 0 {
		m.Wake()
	}
}

// raise moves the level to High. The goroutine whose compare-and-swap takes
// the level out of Idle sends every stage a wake token and reports true.
func (m *Manager) raise() bool {
	for {
		old := m.state.Load()
		if old&closedBit != 0 || isHigh(old) {
			return false
		}
		if m.state.CompareAndSwap(old, (old+genOne)&genMask|uint32(High)) {
			if Level(old&levelMask) == Idle {
				m.unparkAll()
				return true
			}
			return false
		}
	}
}

// unparkParked gives a wake token to every stage that has announced a park
// (see Manager.Wake for why this loses no wakeup).
func (m *Manager) unparkParked() {
	if m.parked.Load() == 0 {
		return
	}
	for _, s := range *m.stages.Load() {
		if s.parking.Load() {
			s.unpark()
		}
	}
}

// idle moves the level to Idle from wherever it is (the generation is kept):
// called by the last stage to announce a park, when no stage has work.
func (m *Manager) idle() {
	for {
		old := m.state.Load()
		if old&closedBit != 0 || Level(old&levelMask) == Idle {
			return
		}
		if m.state.CompareAndSwap(old, old&^levelMask|uint32(Idle)) {
			return
		}
	}
}

// lower moves the level one step down from state st (at Low or High),
// unless the state changed since st was loaded.
func (m *Manager) lower(st uint32) bool {
	return m.state.CompareAndSwap(st, st-1)
}

// unparkAll gives every stage its wake token, in reverse registration order:
// the runtime runs the goroutine readied last first on the waker's P, and the
// first stage registered is usually the one the entry point feeds.
func (m *Manager) unparkAll() {
	stages := *m.stages.Load()
	for i := len(stages) - 1; i >= 0; i-- {
		stages[i].unpark()
	}
}

// Close marks the manager closed and unparks every stage. From then on every
// OnEmpty returns false at once, and Register fails with ErrClosed. Close is
// idempotent.
func (m *Manager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		old := m.state.Load()
		if old&closedBit != 0 {
			return
		}
		if m.state.CompareAndSwap(old, old|closedBit) {
			break
		}
	}
	// A stage that loaded the state before the closed bit and is about to
	// park finds this token and returns; one that loads it later sees the bit.
	m.unparkAll()
}

// Level returns the current pressure level.
func (m *Manager) Level() Level { return Level(m.state.Load() & levelMask) }

// Strategy returns the wait strategy the manager was created with.
func (m *Manager) Strategy() WaitStrategy { return m.strategy }

// StageStats is one registered stage's share of Stats.
type StageStats struct {
	Name    string // as registered
	Parked  bool   // announced a park and not woken since
	Parks   uint64
	Unparks uint64
	Yields  uint64
}

// StageStats appends a snapshot of every registered stage, in registration
// order, to dst and returns it: the same loads as Stats, per stage.
func (m *Manager) StageStats(dst []StageStats) []StageStats {
	for _, s := range *m.stages.Load() {
		dst = append(dst, StageStats{Name: s.name, Parked: s.parking.Load(),
			Parks: s.parks.Load(), Unparks: s.unparks.Load(), Yields: s.yields.Load()})
	}
	return dst
}

// Stats returns a snapshot of the manager's counters. Counters are summed
// over stages without stopping them, so a snapshot taken under load is only
// approximately consistent.
func (m *Manager) Stats() Stats {
	st := m.state.Load()
	stages := *m.stages.Load()
	out := Stats{
		Level:    Level(st & levelMask),
		Closed:   st&closedBit != 0,
		Stages:   len(stages),
		Spinning: int(m.spinners.Load()),
	}
	for _, s := range stages {
		out.Parks += s.parks.Load()
		out.Unparks += s.unparks.Load()
		out.Yields += s.yields.Load()
	}
	return out
}

// spinLimit is the number of spin slots: GOMAXPROCS-1, so that one P is
// always left for the goroutine that holds the work, less one for every
// unparked stage beyond GOMAXPROCS, since those are runnable goroutines that
// would queue behind a spinner. With more stages than Ps, nobody spins past
// the free-spin phase.
func (m *Manager) spinLimit(procs int32) int32 {
	active := m.nstages.Load() - m.parked.Load()
	return procs - 1 - max(0, active-procs)
}

// refreshProcs re-reads GOMAXPROCS, which takes a runtime lock: it is called
// on registration and after a park only, never on the hot path.
func (m *Manager) refreshProcs() {
	n := int32(runtime.GOMAXPROCS(0))
	if m.procs.Load() != n {
		m.procs.Store(n)
	}
}
