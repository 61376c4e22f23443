package chronon

// Unit is a simulated component. Tick runs the unit for one cycle of its
// local clock; the engine calls it exactly once per cycle. A unit reaches the
// rest of the model only through its ports.
type Unit interface {
	Tick()
}

// Initer is implemented by units that prepare state once the topology is
// built, before the first cycle. An error fails Build.
type Initer interface {
	Init() error
}

// Finisher is implemented by units that release or report state when the
// simulation is closed.
type Finisher interface {
	Finish() error
}

// Doner is implemented by units that can tell when their work is complete;
// RunUntilDone stops once every Doner reports true.
type Doner interface {
	Done() bool
}

// Termination is a unit's request to end the run. The first request wins;
// the engine stops at the end of the cycle in which it was made or, with a
// lookahead L > 1 (WithMaxLookahead), at the end of L-1 cycles later.
type Termination struct {
	Unit    string // the requesting unit
	Cycle   uint64 // the cycle of the request
	Reason  string // a short machine-readable reason, such as "commit-target"
	Code    int    // the process exit code a driver should use
	Message string // human-readable detail
}

// Base gives a unit access to its simulation context. Embed it in a unit
// struct; Simulation.Add binds it. Its methods must not be called before the
// unit is added.
type Base struct {
	u *unitState
}

func (b *Base) chrononBase() *Base { return b }

// baser is implemented by every type embedding Base.
type baser interface{ chrononBase() *Base }

// Name returns the unit's name in its simulation.
func (b *Base) Name() string { return b.u.name }

// Cycle returns the unit's local cycle: the cycle it is ticking (or last
// ticked). Ports use the same clock.
func (b *Base) Cycle() uint64 { return b.u.cycle }

// Terminate requests the end of the run. The first request of a simulation
// wins; later ones are ignored.
func (b *Base) Terminate(reason string, code int, message string) {
	s := b.u.sim
	if s.term != nil {
		return
	}
	t := Termination{Unit: b.u.name, Cycle: b.u.cycle, Reason: reason, Code: code, Message: message}
	if st := s.par; st != nil {
		st.terminate(stopKey{t.Cycle, b.u.pos}, t)
		return
	}
	s.termVal = t
	s.term = &s.termVal
	s.stopAt = min(s.stopAt, t.Cycle+s.lookahead)
}

// unitState is the engine's record of one unit. Ports point at it to read
// the owner's local cycle.
type unitState struct {
	sim   *Simulation
	name  string
	index int
	pos   int // position in plan order
	cycle uint64
	unit  Unit
	ctrs  []namedCtr // counters found in the unit's fields
	// events is the unit's trace buffer, written only by its own Tick and
	// merged between cycles (see tracer).
	events []traceEvent
	outs   []outPortAny
	ins    []inPortAny
	lw     *laWorker // the unit's worker under the lookahead engine

	// Sleeping (sleep.go): whether it is a Sleeper; its clock; the cycle of
	// its next tick (none: asleep until a message arrives, or for good);
	// the requests of the current Tick (until 0: none); whether it waits
	// for an arrival (its in-connections report pushes, see conn.arrival); 1 + the cycle it last ticked in (0:
	// none), against duplicate entries.
	sleeper bool
	clock   Clock
	next    uint64
	ran     uint64
	until   uint64
	onRecv  bool
	waiting bool
}

// Reporter is implemented by units that summarize their state at the end of
// a run, such as a digest; drivers print the reports.
type Reporter interface {
	Report() string
}
