package pressure

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Stage is one registered pipeline stage. A Stage is owned by exactly one
// goroutine: OnWork and OnEmpty must not be called concurrently. Name may be
// called from anywhere.
type Stage struct {
	_ [cacheLine]byte
	// Read-only after Register, except parking; all of it is read by the
	// goroutines that unpark the stage.
	m       *Manager
	wake    chan struct{} // wake token, a permit: capacity 1, sent without blocking
	name    string
	parking atomic.Bool // announced a park and not woken since (owner writes)
	_       [cacheLine]byte
	// Owner-only state of the current empty streak, on its own lines so that
	// under load no two goroutines write the same cache line.
	streak    uint64 // OnEmpty calls since the last OnWork or park (never wraps)
	announced bool   // owner's copy of parking: the next OnEmpty parks
	spinning  bool   // holds one of the manager's spin slots
	denied    bool   // asked for a spin slot this streak and got none
	timed     bool   // start is set
	gen       uint32 // generation of the level when the clock started
	start     int64  // nanotime when the streak's clock started
	polls     uint64 // streak when the clock started
	yieldFrom int64  // nanotime of the streak's first yield without a slot; 0: none yet
	canSpin   bool   // this streak may spin (decided on its first poll)
	sink      uint32 // result of pause, so its loop is not optimised away
	// Counters written by the owner only (so load+store, not add) and read
	// by Manager.Stats.
	parks, unparks, yields atomic.Uint64
	_                      [cacheLine]byte
}

// Name returns the name the stage was registered with.
func (s *Stage) Name() string { return s.name }

// OnWork reports that the stage found work in this iteration. It ends the
// stage's empty streak and, if the level is not High, raises it to High
// (unparking every stage if it was Idle). Under sustained load it is a
// private fence and a single atomic load of the shared level.
//
// OnWork does not unpark a stage that parked above Idle: a stage whose pop
// makes room for a producer waiting on back pressure calls that producer's
// Wake (or Manager.Wake).
func (s *Stage) OnWork() {
	if s.streak != 0 {
		s.endStreak()
	}
	fence() // the caller's pop precedes our load of the level
	if !isHigh(s.m.state.Load()) {
		s.m.raise()
	}
}

// Wake tells the manager that work has been, or is about to be, made visible
// to this stage by another goroutine. It is Manager.Wake for a publisher
// that knows which stage it feeds: it raises the level as Manager.Wake does,
// but above Idle it unparks this stage only, so a pipeline's other parked
// stages are not woken by work that is not theirs. When the level is High
// and the stage is not parked, it is a private fence and two atomic loads.
func (s *Stage) Wake() {
	fence() // the caller's publication precedes our loads of level and parking
	s.Prewake()
}

// Prewake is Wake without its ordering, for an entry point about to
// publish: it raises the level and unparks the stage as Wake does, so a
// parked stage is already waking when the item lands, but it orders
// nothing before its loads, so it cannot stand in for the Wake after the
// publication. It saves the fence (a locked instruction on amd64) that a
// call before any publication does not need.
func (s *Stage) Prewake() {
	if !isHigh(s.m.state.Load()) && s.m.raise() {
		return
	}
	if s.parking.Load() {
		s.unpark()
	}
}

// OnEmpty reports that the stage found no work in this iteration, and waits
// as the manager decides: it returns at once (spin), after runtime.Gosched
// (yield), or after the stage has been unparked (park). The caller polls its
// input again when OnEmpty returns true. OnEmpty returns false once the
// manager is closed, and the stage should then exit.
//
// A park takes two calls: the first announces it and returns true, the
// second blocks until a wake, so the caller's poll between them is the
// re-check that makes parking safe against a concurrent Wake.
func (s *Stage) OnEmpty() bool {
	// Under the parking strategies a stage announces a park when it finds
	// the level Idle, or when it has yielded for its budget: yieldFor
	// without a spin slot, holdFor past the spin phase with one, at any
	// level. Yielding longer would keep every P busy with Gosched loops,
	// and the Go scheduler, which polls the network only when a P runs out
	// of goroutines (sysmon otherwise, every 10 ms), would leave the
	// goroutines that hold the pipeline's next input waiting for up to
	// 10 ms (docs/pressure.md, "Spinning and GOMAXPROCS").
	m := s.m
	st := m.state.Load()
	if st&closedBit != 0 {
		s.endStreak()
		return false
	}
	if s.announced {
		return s.park() // the caller polled since the announcement: nothing
	}
	lvl := Level(st & levelMask)
	s.streak++
	p := &m.p
	if lvl == Idle && p.park {
		s.announce()
		return true
	}
	procs := m.procs.Load()
	if s.streak == 1 {
		// Spin at all only if a P can be spared: not on GOMAXPROCS=1, and
		// not when the unparked stages outnumber the Ps.
		s.canSpin = procs > 1 && m.spinLimit(procs) > 0
	}
	if s.streak <= p.freeSpin && s.canSpin {
		// Short gaps spin without touching shared state.
		s.pause()
		return true
	}
	if s.spinning || s.trySpin(lvl, procs) {
		if p.spin == 0 || s.streak <= p.freeSpin+p.spin {
			if !s.timed || s.streak&63 == 0 {
				s.tick(st)
				// The runtime's spinning also stops when the P has other
				// goroutines to run. We cannot see the run queue, so a
				// spinner offers its P every 64 polls: it costs an idle
				// spinner little and keeps a woken stage queued behind it
				// from waiting for preemption.
				s.yield()
			} else {
				s.pause()
			}
			return true
		}
		// Past the spin phase the slot holder yields, keeping its slot
		// under the parking strategies (its streak clock lowers the
		// level), until the level falls to Idle or its hold budget is
		// spent.
		if !p.park {
			s.endSpin()
		} else if p.holdFor != 0 && s.yielded(p.holdFor) {
			s.announce()
			return true
		}
	} else if p.park && s.yielded(p.yieldFor) {
		s.announce()
		return true
	}
	if !s.timed || s.streak&p.tickMask == 0 {
		s.tick(st)
	}
	s.yield()
	return true
}

// yielded reports whether the stage has yielded for at least d in this
// streak (true at once for d == 0). The clock is read every tickMask+1
// polls only.
func (s *Stage) yielded(d time.Duration) bool {
	if d == 0 {
		return true
	}
	p := &s.m.p
	if s.yieldFrom != 0 && s.streak&p.tickMask != 0 {
		return false
	}
	now := s.m.clock()
	if s.yieldFrom == 0 {
		s.yieldFrom = now | 1 // 0 means unset
		return false
	}
	return time.Duration(now-s.yieldFrom) >= d
}

// pause delays a spinning stage's next poll by a few tens of nanoseconds,
// as the runtime's spinning does with PAUSE instructions (procyield, which Go
// does not expose): a poll loop that reads its input's cache line back to
// back slows down the producer writing that line.
func (s *Stage) pause() {
	x := uint32(s.streak)
	for range 32 {
		x = x*0x9e3779b9 + 1
	}
	s.sink = x
}

func (s *Stage) yield() {
	runtime.Gosched()
	s.yields.Store(s.yields.Load() + 1)
}

// trySpin takes a spin slot if spinning is allowed now. Spinning is allowed
// while the level is High (at any level under LowLatency), and only for as
// many stages at a time as Manager.spinLimit allows, so at least one P is
// left for the goroutine that holds the work (as the runtime's own mutex
// spinning requires other running Ps and an empty run queue). A denied stage
// yields and asks again every 64 polls.
func (s *Stage) trySpin(lvl Level, procs int32) bool {
	p := &s.m.p
	if lvl != High && p.park {
		return false
	}
	if p.spin != 0 && s.streak > p.freeSpin+p.spin {
		return false
	}
	if s.denied && s.streak&63 != 0 {
		return false
	}
	for {
		n := s.m.spinners.Load()
		if n >= s.m.spinLimit(procs) {
			s.denied = true
			return false
		}
		if s.m.spinners.CompareAndSwap(n, n+1) {
			s.spinning = true
			s.denied = false
			return true
		}
	}
}

func (s *Stage) endSpin() {
	if s.spinning {
		s.spinning = false
		s.m.spinners.Add(-1)
	}
}

func (s *Stage) endStreak() {
	s.streak = 0
	s.denied = false
	s.timed = false
	s.yieldFrom = 0
	s.endSpin()
	s.unannounce()
}

// tick runs the streak's clock and lowers the level once the streak has
// lasted long enough. If the level rose to High since the clock started (the
// generation in st moved), some stage has had work: the clock restarts, so a
// busy stage (which raises the level) and an idle one (which lowers it) trade
// at most one write per highToLow, and work that came and went between two
// clock reads still counts.
func (s *Stage) tick(st uint32) {
	now := s.m.clock()
	if !s.timed || st&genMask != s.gen {
		s.timed, s.start, s.polls, s.gen = true, now, s.streak, st&genMask
		return
	}
	el, polls := time.Duration(now-s.start), s.streak-s.polls
	p := &s.m.p
	switch Level(st & levelMask) {
	case High:
		if el >= p.highToLow && polls >= p.minPolls {
			s.m.lower(st)
		}
	case Low:
		if el >= p.highToLow+p.lowToIdle && polls >= 2*p.minPolls {
			s.m.lower(st)
		}
	}
}

// announce starts a park: it gives up the stage's spin slot and publishes,
// with sequentially consistent stores, that the stage is about to park.
// After it the caller polls its input once more and the next OnEmpty parks;
// a publisher whose Wake comes after that poll sees the announcement (see
// Manager.Wake). The last stage to announce moves the level to Idle:
// then no stage has work, whatever the streak clocks say.
func (s *Stage) announce() {
	s.endSpin()
	s.announced = true
	s.parking.Store(true)
	m := s.m
	if m.parked.Add(1) >= m.nstages.Load() {
		m.idle()
	}
}

// unannounce withdraws the stage's announcement, after it woke or found work.
func (s *Stage) unannounce() {
	if s.announced {
		s.announced = false
		s.parking.Store(false)
		s.m.parked.Add(-1)
	}
}

// park blocks until the stage's wake token arrives, and reports whether the
// manager is still open. The stage has announced the park.
func (s *Stage) park() bool {
	s.parks.Store(s.parks.Load() + 1)
	<-s.wake
	s.unannounce()
	s.streak, s.timed, s.denied, s.yieldFrom = 0, false, false, 0
	s.m.refreshProcs()
	if s.m.state.Load()&closedBit != 0 {
		return false
	}
	s.unparks.Store(s.unparks.Load() + 1)
	return true
}

// unpark gives the stage its wake token unless it already holds one.
func (s *Stage) unpark() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

var epoch = time.Now()

// nanotime is a monotonic clock in nanoseconds.
func nanotime() int64 { return int64(time.Since(epoch)) }
