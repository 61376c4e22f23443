package chronon

import (
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"
)

// This file is the sleeping scheduler: units that sleep until a cycle or
// until a message arrives, and clocks that tick a unit every k cycles.
//
// The contract (docs/chronon.md, "Sleeping units and clock domains"): a run
// with sleeping units gives the results of the same model in which every
// unit ticks every cycle and, at the start of its Tick, returns at once
// unless it is on its clock edge and either its sleep has ended or one of
// its in-ports is Ready. The scheduler computes the cycle of a unit's next
// tick instead of asking:
//
//   - a unit's ports only gain messages while it sleeps (flushes, filters
//     and pops are the receiver's own; cancels discard only when the
//     receiver reaches a message, and Ready reports a cancelled message
//     too), so the first cycle in which an in-port is Ready is the
//     smallest arrive cycle of the messages it holds when it falls asleep
//     and of those pushed to it later;
//   - later pushes notify the scheduler through the connection: while the
//     receiver sleeps until a message arrives, its in-connections are
//     armed, which sends every push on them through conn.full (the push's
//     slow path, which the unarmed hot path does not reach) to
//     conn.arrival.
//
// The sequential engine keeps every scheduled unit in one min-heap by
// (cycle, plan position), so it ticks the awake units of a cycle in plan
// order, each one pop or sift, and jumps over cycles in which no unit
// wakes. The parallel engine uses the same heap between cycles (see
// sleep_engine.go).

// Clock is a unit's clock domain: the unit ticks in the cycles c with
// c % Period == Phase. The zero Clock, and Period 1, tick every cycle. Its
// ports and Cycle keep counting every cycle, so delays are in cycles of the
// simulation, not of the clock.
type Clock struct {
	Period uint64 `yaml:"period"`
	Phase  uint64 `yaml:"phase"`
}

// decodeClock decodes a unit's clock key: a mapping of period and phase.
func decodeClock(n *yaml.Node, k *Clock) error {
	if n.Kind != yaml.MappingNode {
		return at(n, "clock must be a mapping with period and phase")
	}
	for i := 0; i < len(n.Content); i += 2 {
		key, v := n.Content[i], n.Content[i+1]
		var err error
		switch key.Value {
		case "period":
			err = v.Decode(&k.Period)
		case "phase":
			err = v.Decode(&k.Phase)
		default:
			return at(key, "unknown clock key %q (want period, phase)", key.Value)
		}
		if err != nil {
			return at(v, "clock %s: want a non-negative integer, not %q", key.Value, v.Value)
		}
	}
	if err := k.validate(); err != nil {
		return at(n, "%v", err)
	}
	return nil
}

func (k Clock) validate() error {
	if k.Period == 0 && k.Phase == 0 {
		return nil
	}
	if k.Period == 0 || k.Phase >= k.Period {
		return fmt.Errorf("clock period %d, phase %d: want period >= 1 and phase < period", k.Period, k.Phase)
	}
	return nil
}

// Sleeper is implemented by units that may sleep: their Tick calls
// Base.SleepUntil or Base.SleepUntilReceive. Build turns the sleeping
// scheduler on when a unit is a Sleeper or has a Clock other than every
// cycle; a model with neither keeps the plain loop over every unit and pays
// nothing for sleeping. MaySleep is a marker and is never called.
type Sleeper interface {
	Unit
	MaySleep()
}

// SetClock puts the unit named name in clock domain k (see Clock). Call it
// before Build. In YAML, a unit's clock key: `clock: {period: 4, phase: 1}`.
func (s *Simulation) SetClock(name string, k Clock) error {
	if s.built {
		return ErrBuilt
	}
	u, ok := s.byName[name]
	if !ok {
		return topoErr("set clock: no unit %q", name)
	}
	if err := k.validate(); err != nil {
		return topoErr("unit %q: %v", name, err)
	}
	if k.Period == 1 {
		k = Clock{}
	}
	u.clock = k
	return nil
}

// SleepUntil puts the unit to sleep after this Tick until cycle c: it next
// ticks in the first cycle at or after c on its clock (at once, in the next
// cycle, if c is not later). With SleepUntilReceive in the same Tick, it
// wakes at whichever comes first. The unit must be a Sleeper.
func (b *Base) SleepUntil(c uint64) {
	b.u.mustSleep()
	b.u.until = max(c, 1) // 0 means no request
}

// SleepUntilReceive puts the unit to sleep after this Tick until one of
// its in-ports is Ready: it next ticks in the first cycle on its clock in
// which one is (a message already ready wakes it in the next cycle). A
// message that a pending cancel will discard wakes it too, as Ready
// reports. Without an in-port, or with SleepUntil, see there. The unit
// must be a Sleeper.
func (b *Base) SleepUntilReceive() {
	b.u.mustSleep()
	b.u.onRecv = true
}

func (u *unitState) mustSleep() {
	if !u.sleeper {
		panic(fmt.Sprintf("chronon: unit %s sleeps but does not implement chronon.Sleeper", u.name))
	}
}

// edge returns the first cycle at or after c on the unit's clock.
func (u *unitState) edge(c uint64) uint64 {
	p := u.clock.Period
	if p == 0 || c == none {
		return c
	}
	r := (c%p + p - u.clock.Phase) % p // (c - phase) mod p
	if r == 0 {
		return c
	}
	if c > none-(p-r) {
		return none
	}
	return c + (p - r)
}

// wake is a heap entry: the unit at plan position pos ticks in cycle. An
// entry is current while the unit's next is its cycle; others are skipped.
type wake struct {
	cycle uint64
	pos   int
}

func (a wake) less(b wake) bool {
	return a.cycle < b.cycle || a.cycle == b.cycle && a.pos < b.pos
}

// sleepSched is the scheduler of a simulation with sleeping units.
type sleepSched struct {
	s *Simulation
	h []wake // min-heap by (cycle, pos)
	// cur holds the plan positions of the units due in the next cycle of
	// the sequential engine that are not in h, in plan order; nxt is where
	// the cycle collects the next ones.
	cur, nxt []int
	// par is the parallel engine while it runs, nil otherwise; clusters
	// its per-cluster state (sleep_engine.go).
	par      *engine
	clusters []sleepCluster
	// wakes counts the wake-ups by an arrival, crossed those whose sender
	// was placed on another worker's list (parallel engine; for tests).
	wakes, crossed uint64
}

// maySleep reports whether a unit is a Sleeper or has a clock other than
// every cycle: whether Build turns the sleeping scheduler on.
func (s *Simulation) maySleep() bool {
	for _, u := range s.units {
		if _, ok := u.unit.(Sleeper); ok || u.clock.Period != 0 {
			return true
		}
	}
	return false
}

// initSleep turns the scheduler on at Build when a unit may sleep, and
// schedules every unit on its first clock edge.
func (s *Simulation) initSleep() {
	on := false
	for _, u := range s.units {
		_, u.sleeper = u.unit.(Sleeper)
		on = on || u.sleeper || u.clock.Period != 0
	}
	if !on {
		return
	}
	q := &sleepSched{s: s, clusters: make([]sleepCluster, len(s.plan.clusters))}
	for _, u := range s.order {
		u.next = u.edge(s.cycle)
		q.h = append(q.h, wake{u.next, u.pos})
	}
	// Plan order with equal cycles is already a heap; clocks make it not.
	slices.SortFunc(q.h, func(a, b wake) int {
		if a.less(b) {
			return -1
		}
		return 1
	})
	s.sleep = q
}

func (q *sleepSched) push(w wake) {
	q.h = append(q.h, w)
	h := q.h
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !w.less(h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = w
}

// fix restores the heap after h[0] changed to a larger entry.
func (q *sleepSched) fix() {
	h := q.h
	n := len(h)
	w := h[0]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		if r := l + 1; r < n && h[r].less(h[l]) {
			l = r
		}
		if !h[l].less(w) {
			break
		}
		h[i] = h[l]
		i = l
	}
	h[i] = w
}

func (q *sleepSched) pop() {
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h = q.h[:n]
	if n > 0 {
		q.fix()
	}
}

// settle decides, after the unit's Tick in cycle c, the cycle of its next
// tick from what it asked for (and resets the requests), arming or
// disarming its in-connections. It returns none for a unit asleep until a
// message arrives that none has yet.
func (q *sleepSched) settle(u *unitState, c uint64) uint64 {
	next := u.edge(c + 1)
	if u.until == 0 && !u.onRecv {
		u.waiting = false
		return next
	}
	w := none
	if u.until != 0 {
		w = u.edge(max(u.until, c+1))
	}
	recv := u.onRecv
	if recv {
		if a := u.nextArrive(); a != none {
			w = min(w, u.edge(max(a, c+1)))
		}
	}
	u.until, u.onRecv = 0, false
	// Waiting only while an arrival could still wake it earlier.
	u.waiting = recv && w != next && u.hasIns()
	if u.waiting {
		u.arm()
	}
	return w
}

// arrival is called by a push on an armed connection in sender cycle c,
// arriving in cycle a: the receiver wakes at a, on its clock, unless it is
// due sooner. The sequential engine updates the heap at once; the parallel
// engine records the wake-up in the sender's cluster (see noteArrival).
func (q *sleepSched) arrival(from, to *unitState, c, a uint64) {
	if e := q.par; e != nil {
		e.noteArrival(from, to, c, a)
		return
	}
	q.wakeAt(to, a)
}

// wakeAt lowers a waiting unit's next tick to the clock edge at or after a
// and reports whether it did.
func (q *sleepSched) wakeAt(u *unitState, a uint64) bool {
	if !u.waiting {
		return false
	}
	w := u.edge(a)
	if w >= u.next {
		return false
	}
	u.next = w
	q.push(wake{w, u.pos})
	q.wakes++
	return true
}

// stepSleepy runs cycle s.cycle with the sleeping scheduler: the units due
// in it, in plan order. They are the units that ticked in the cycle before
// and stay awake (cur, in plan order, since they were appended as they
// ticked), merged with the heap's entries of the cycle; a unit that stays
// awake costs an append, not a heap operation. If none is due, it jumps to
// the next cycle in which one is, but not past end or the next
// observation.
func (s *Simulation) stepSleepy(end uint64) {
	q := s.sleep
	c := s.cycle
	if len(q.cur) == 0 && (len(q.h) == 0 || q.h[0].cycle > c) {
		next := none
		if len(q.h) > 0 {
			next = q.h[0].cycle
		}
		s.cycle = min(next, end, s.obs.next)
		if s.cycle == s.obs.next {
			s.obs.observe(s, s.cycle)
		}
		return
	}
	for i := 0; ; {
		var pos int
		switch {
		case i < len(q.cur) && (len(q.h) == 0 || q.h[0].cycle > c || q.cur[i] < q.h[0].pos):
			pos = q.cur[i]
			i++
		case len(q.h) > 0 && q.h[0].cycle == c:
			pos = q.h[0].pos
			q.pop()
		default:
			q.cur, q.nxt = q.nxt, q.cur[:0]
			s.cur = 0
			s.cycle = c + 1
			if s.cycle == s.obs.next {
				s.obs.observe(s, s.cycle)
			}
			return
		}
		u := s.order[pos]
		if u.next != c || u.ran == c+1 {
			continue // superseded by an earlier wake-up, or a duplicate
		}
		u.ran = c + 1
		u.cycle = c
		s.cur = pos + 1
		u.unit.Tick()
		switch u.next = q.settle(u, c); {
		case u.next == c+1:
			q.nxt = append(q.nxt, pos)
		case u.next != none:
			q.push(wake{u.next, pos})
		}
	}
}

// flushCur moves the units due in the next cycle from cur to the heap, for
// the parallel engine, which takes every unit from the heap.
func (q *sleepSched) flushCur() {
	for _, pos := range q.cur {
		q.push(wake{q.s.order[pos].next, pos})
	}
	q.cur = q.cur[:0]
}

// runSleepy is runSeq with the sleeping scheduler.
func (s *Simulation) runSleepy(n uint64) error {
	for end := s.cycle + n; s.cycle < min(end, s.stopAt); {
		s.stepSleepy(end)
	}
	return s.failure()
}

// hasIns reports whether the unit has a connected in-port.
func (u *unitState) hasIns() bool {
	for _, in := range u.ins {
		if in.connCount() > 0 {
			return true
		}
	}
	return false
}

// nextArrive returns the smallest arrive cycle of the messages in the
// unit's in-ports, or none.
func (u *unitState) nextArrive() uint64 {
	a := none
	for _, in := range u.ins {
		a = min(a, in.nextArrive())
	}
	return a
}

// arm arms the unit's in-connections (see conn.arrival).
func (u *unitState) arm() {
	for _, in := range u.ins {
		in.arm()
	}
}

// nextArrive returns the smallest arrive cycle of the port's messages, or
// none: Ready is true from that cycle on.
func (p *InPort[T]) nextArrive() uint64 {
	switch {
	case p.one != nil:
		if p.fhead < len(p.front) {
			return p.front[p.fhead].arrive
		}
		if h := p.ring.Peek(); h != nil {
			return h.arrive
		}
	case p.merge != nil:
		if p.drained() {
			return none
		}
		if a, ok := p.merge.MinArrivalCycle(); ok {
			return a
		}
	}
	return none
}

// arm makes every push on the port's connections call arrival: armed, with
// lim 0, sends admits (on a finite-capacity edge) and push and broadcast to
// their slow paths, none of which raises lim while armed, and push to full,
// which then calls arrival. Arming writes only the producer's line, which
// the receiver's drained shortcut reads too.
func (p *InPort[T]) arm() {
	for _, k := range p.conns {
		if !k.armed {
			k.armed, k.lim = true, 0
		}
	}
}

// arrival is full for an armed connection: it reports the push in producer
// cycle c to the scheduler, unless the push overflows (then nothing
// arrives, and the run stops at the end of c). The first push after the
// receiver woke disarms the connection instead, so that waking costs no
// pass over the receiver's connections; lim stays 0, so the next admits
// (finite capacity) or push (unlimited) computes it again from the credits
// (no push can overflow before the first). The receiver's waiting changes
// only between its ticks (in the parallel engine, between cycles), so it
// is stable while the sender reads it.
func (k *conn[T]) arrival(c uint64) bool {
	if k.capacity == 0 && k.pushes >= k.credits(c)+UnboundedDepth {
		return true
	}
	if !k.in.u.waiting {
		k.armed = false
		return false
	}
	k.out.u.sim.sleep.arrival(k.out.u, k.in.u, c, c+uint64(k.delay))
	return false
}

// sleepWakes returns how many sleeping units an arrival woke earlier than
// they were due, and how many of those in the parallel engine by a sender
// placed on another worker's list (for tests).
func (s *Simulation) sleepWakes() (all, crossed uint64) {
	if s.sleep == nil {
		return 0, 0
	}
	return s.sleep.wakes, s.sleep.crossed
}
