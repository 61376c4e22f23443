package chronon

import (
	"fmt"
	"time"
)

// Simulation is a model under construction or being run. Add units, connect
// their ports, Build, then Run. A Simulation is driven by one goroutine.
type Simulation struct {
	units  []*unitState
	byName map[string]*unitState
	edges  []*edge
	ins    []inPortAny
	built  bool
	plan   plan
	order  []*unitState
	pf     [][]uintptr // see planPrefetch

	cycle  uint64
	stopAt uint64 // no cycle >= stopAt runs: a stop was requested (see stopKey); none: no stop
	// lookahead is L of WithMaxLookahead (at least 1): a termination or an
	// overflow in cycle c stops the run at the end of c+L-1.
	lookahead uint64
	term      *Termination
	termVal   Termination
	fault     error
	// cur is 1 + the plan position of the unit being ticked (0: none), for
	// panic reports; an index rather than a pointer, so that setting it
	// before every Tick needs no write barrier.
	cur int

	workers   int            // as set by SetWorkers
	eng       parallelEngine // the parallel engine, if selected
	seqReason string         // why workers > 1 still runs sequentially
	par       *stops         // the stop record during a parallel run

	threshold   time.Duration // see SetParallelThreshold
	calibrated  bool
	seqPer      time.Duration // measured sequential cost of a cycle; 0 before calibration
	seqLeft     int           // sequential segments to run before probing the parallel engine again
	backoff     int
	segCycles   uint64 // adaptive segment length; 0: from seqPer (tests set it)
	seqSegments int    // adaptive segments run sequentially, for tests
	calCycles   uint64 // cycles the calibration ran sequentially, for tests

	obs     observer
	cfg     simConfig
	derived []*derived  // see DeriveCounter
	lg      *simLog     // the units' log; nil without WithLogger
	sleep   *sleepSched // the sleeping scheduler; nil when no unit may sleep
}

// edge is the untyped record of a connection, for validation and planning.
type edge struct {
	id       uint64
	from, to *unitState
	name     string // "unit.port -> unit.port"
	delay    uint64
	src      string // "file:line" when declared in YAML
}

func (e *edge) String() string {
	if e.src != "" {
		return fmt.Sprintf("%s (delay %d, %s)", e.name, e.delay, e.src)
	}
	return fmt.Sprintf("%s (delay %d)", e.name, e.delay)
}

// New returns an empty simulation configured by opts.
func New(opts ...SimOption) *Simulation {
	cfg := defaultSimConfig()
	for _, o := range opts {
		o(&cfg)
	}
	s := &Simulation{byName: make(map[string]*unitState), obs: observer{next: none}, threshold: DefaultParallelThreshold, cfg: cfg, stopAt: none, lookahead: 1}
	if cfg.logger != nil {
		s.lg = newSimLog(cfg.logger, cfg.logFilter)
		s.obs.lg = s.lg
		s.obs.schedule()
	}
	return s
}

// Add adds u under name, a dot-separated path such as "core0.alu[2]" (see
// Group). It binds u's embedded Base and finds its ports
// and counters: fields of type OutPort, InPort or Counter (exported or not),
// arrays of them, and those of embedded structs. A field is named after the
// struct field, or by a `chronon:"name"` tag; the tag "-" hides it. Array
// elements are named "field[i]".
func (s *Simulation) Add(name string, u Unit) error {
	if s.built {
		return ErrBuilt
	}
	if err := checkUnitName(name); err != nil {
		return err
	}
	if _, dup := s.byName[name]; dup {
		return topoErr("duplicate unit name %q", name)
	}
	us := &unitState{sim: s, name: name, index: len(s.units), unit: u}
	if err := discover(us, u); err != nil {
		return err
	}
	if b, ok := u.(baser); ok {
		b.chrononBase().u = us
	}
	s.units = append(s.units, us)
	s.byName[name] = us
	s.ins = append(s.ins, us.ins...)
	return nil
}

// Connect connects out to in with the given options (by default Delay(1),
// Capacity(Unlimited), Rate(1)). Both ports must belong to units added to
// the same simulation, before Build. Connecting one OutPort several times
// makes a fanout; connecting one InPort several times makes a fan-in.
func Connect[T any](out Output[T], in *InPort[T], opts ...Option) error {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	_, err := connect(out.outPort(), in, cfg)
	return err
}

func connect[T any](out *OutPort[T], in *InPort[T], cfg connConfig) (*edge, error) {
	if out.u == nil || in.u == nil {
		return nil, topoErr("connect %s -> %s: port of a unit not added to a simulation", out.Name(), in.Name())
	}
	s := out.u.sim
	if in.u.sim != s {
		return nil, topoErr("connect %s -> %s: ports belong to different simulations", out.Name(), in.Name())
	}
	if s.built {
		return nil, ErrBuilt
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("connect %s -> %s: %w", out.Name(), in.Name(), err)
	}
	name := out.Name() + " -> " + in.Name()
	k := &conn[T]{
		id: uint64(len(s.edges)), name: name, out: out, in: in,
		delay: uint32(cfg.delay), capacity: uint32(cfg.capacity), rate: uint32(cfg.rate),
		dff:       cfg.delay == 1 && cfg.capacity == 1 && cfg.rate == 1,
		lane:      uint32(len(in.conns)),
		pushCycle: none, popCycle: none, cut: cut{log: &noCancels, d: uint32(cfg.delay)}, lim: none,
	}
	if k.capacity == 0 {
		k.lim = UnboundedDepth // full's first check (see conn.full)
	} else {
		k.lim = uint64(k.capacity) // admits's: no credits yet (see conn.admits)
	}
	out.conns = append(out.conns, k)
	in.conns = append(in.conns, k)
	e := &edge{id: k.id, from: out.u, to: in.u, name: name, delay: uint64(k.delay), src: cfg.src}
	s.edges = append(s.edges, e)
	return e, nil
}

// Build validates the topology, orders the units, allocates every lane and
// calls the units' Init hooks. It rejects zero-delay cycles with a
// *CycleError.
func (s *Simulation) Build() (err error) {
	if s.built {
		return ErrBuilt
	}
	if err := s.setLookahead(); err != nil {
		return err
	}
	p, err := newPlan(len(s.units), s.edges)
	if err != nil {
		return err
	}
	s.plan = p
	s.order = make([]*unitState, len(p.order))
	for i, ui := range p.order {
		s.order[i] = s.units[ui]
		s.order[i].pos = i
	}
	for _, u := range s.units {
		for _, out := range u.outs {
			out.planBroadcast(s.cfg.broadcast)
			out.buildCancel()
		}
	}
	for _, in := range s.ins {
		if err := in.build(); err != nil {
			return fmt.Errorf("build %s: %w", in.fullName(), err)
		}
	}
	s.collapseState()
	if s.lg != nil {
		s.lg.prepare(s.units)
	}
	s.initSleep()
	s.planPrefetch()
	defer s.recoverUnit(&err)
	for _, u := range s.order {
		if i, ok := u.unit.(Initer); ok {
			s.cur = u.pos + 1
			if err := i.Init(); err != nil {
				return fmt.Errorf("chronon: init %s: %w", u.name, err)
			}
		}
	}
	s.cur = 0
	s.built = true
	return nil
}

// Cycle returns the next cycle the simulation will run (the number of
// cycles run so far).
func (s *Simulation) Cycle() uint64 { return s.cycle }

// Termination returns the first termination request, if a unit made one.
func (s *Simulation) Termination() (Termination, bool) {
	if s.term == nil {
		return Termination{}, false
	}
	return *s.term, true
}

// Units returns the unit names in the order they were added.
func (s *Simulation) Units() []string {
	names := make([]string, len(s.units))
	for i, u := range s.units {
		names[i] = u.name
	}
	return names
}

// Connections returns the number of connections.
func (s *Simulation) Connections() int { return len(s.edges) }

func (s *Simulation) overflow(u *unitState, conn string, c uint64) {
	if st := s.par; st != nil {
		st.overflowed(stopKey{c, u.pos}, &OverflowError{Conn: conn, Cycle: c})
		return
	}
	if s.fault == nil {
		s.fault = &OverflowError{Conn: conn, Cycle: c}
	}
	s.stopAt = min(s.stopAt, c+s.lookahead)
}

// halted reports whether the run has stopped for good: a stop's last cycle
// has run, or a unit panicked.
func (s *Simulation) halted() bool { return s.cycle >= s.stopAt }

// recoverUnit turns a panic in a unit into a *UnitError.
func (s *Simulation) recoverUnit(err *error) {
	if r := recover(); r != nil {
		name := "?"
		if s.cur > 0 {
			name = s.order[s.cur-1].name
		}
		*err = &UnitError{Unit: name, Cycle: s.cycle, Value: r}
		s.fault = *err
		s.stopAt = s.cycle
	}
}

// Unit returns the unit added under name.
func (s *Simulation) Unit(name string) (Unit, bool) {
	u, ok := s.byName[name]
	if !ok {
		return nil, false
	}
	return u.unit, true
}
