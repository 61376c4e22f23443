package chronon

import (
	"sync"
	"sync/atomic"
)

// stopKey places a stop request (termination, panic, overflow) in the
// sequential order of a run. What wins in a cycle is decided by plan order
// alone (docs/chronon.md, "What wins in a cycle"), and every engine follows
// the same rules, with L the simulation's lookahead (WithMaxLookahead, 1 by
// default):
//
//  1. A termination or an overflow requested in cycle c ends the run at the
//     end of cycle c+L-1: the earliest such request decides, and nothing of
//     a later cycle happens. With L = 1 that is the end of c.
//  2. A panic ends the run at once, at the panicking unit: units after it
//     in plan order do not tick in its cycle, and nothing of a later cycle
//     happens, so their requests are never made; the unit's own requests
//     made before it panicked, and those of units before it, stand.
//  3. A panic is the run's error whenever one happens (over an overflow of
//     the same or an earlier cycle); otherwise the first overflow in
//     (cycle, plan position) order is.
//  4. Among terminations, the first in (cycle, plan position) order wins.
//
// The parallel engines record every request and keep the least of each
// kind, then drop what the first panic preempts (rule 2).
type stopKey struct {
	cycle uint64
	pos   int
}

func (a stopKey) less(b stopKey) bool {
	if a.cycle != b.cycle {
		return a.cycle < b.cycle
	}
	return a.pos < b.pos
}

// stops records the stop requests of a parallel run, from any worker. The
// mutex is taken only when a unit requests a stop; stopAt is what workers
// check between cycles.
type stops struct {
	stopAt atomic.Uint64 // no cycle >= stopAt runs
	_      [cacheLine - 8]byte

	latency uint64 // L-1: cycles a termination or overflow runs on for

	mu       sync.Mutex
	panicErr error // the first panic
	panicAt  stopKey
	over     error // the first overflow
	overAt   stopKey
	term     Termination
	termAt   stopKey
	hasTerm  bool
}

// reset prepares the record for a run that starts with s's pending stop.
func (st *stops) reset(s *Simulation) {
	st.stopAt.Store(s.stopAt)
	st.latency = s.lookahead - 1
	st.panicErr, st.over, st.hasTerm = nil, nil, false
}

// lower lowers stopAt to c.
func (st *stops) lower(c uint64) {
	for {
		old := st.stopAt.Load()
		if old <= c || st.stopAt.CompareAndSwap(old, c) {
			return
		}
	}
}

// panicked records a panic: nothing after it runs (the other workers still
// finish its cycle, where a unit earlier in plan order may panic too).
func (st *stops) panicked(k stopKey, err error) {
	st.mu.Lock()
	if st.panicErr == nil || k.less(st.panicAt) {
		st.panicErr, st.panicAt = err, k
	}
	st.mu.Unlock()
	st.lower(k.cycle + 1)
}

// overflowed records an overflow, which ends the run like a termination.
func (st *stops) overflowed(k stopKey, err error) {
	st.mu.Lock()
	if st.over == nil || k.less(st.overAt) {
		st.over, st.overAt = err, k
	}
	st.mu.Unlock()
	st.lower(k.cycle + st.latency + 1)
}

// terminate records a termination request.
func (st *stops) terminate(k stopKey, t Termination) {
	st.mu.Lock()
	if !st.hasTerm || k.less(st.termAt) {
		st.term, st.termAt, st.hasTerm = t, k, true
	}
	st.mu.Unlock()
	st.lower(k.cycle + st.latency + 1)
}

// hasPanic reports whether a unit panicked in a cycle before c.
func (st *stops) hasPanic(c uint64) bool {
	if st.stopAt.Load() > c {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.panicErr != nil
}

// finish applies the run's outcome to s, the workers having stopped at
// cycle end (the first cycle not run). It applies rule 2: requests that the
// first panic preempts were never made.
func (st *stops) finish(s *Simulation, end uint64) {
	s.cycle = end
	s.stopAt = st.stopAt.Load()
	if st.panicErr != nil {
		p := st.panicAt
		if st.hasTerm && p.less(st.termAt) {
			st.hasTerm = false
		}
		s.cycle, s.stopAt = p.cycle, p.cycle // the sequential engine never finishes the cycle of a panic
		s.fault = st.panicErr
	} else if st.over != nil && s.fault == nil {
		s.fault = st.over
	}
	if st.hasTerm && s.term == nil {
		s.termVal = st.term
		s.term = &s.termVal
	}
}
