package chronon

// NoCancelOutPort is an OutPort without CancelInFlight. Build allocates it
// no cancel log: its receivers' cancel check reads one shared log that
// stays empty, and never refreshes. Use it for every output that is never
// cancelled (most are). Declare it as a field of the unit struct, like an
// OutPort, and connect it with Connect.
type NoCancelOutPort[T any] struct {
	p OutPort[T]
}

// CanSend is OutPort.CanSend.
func (p *NoCancelOutPort[T]) CanSend() bool { return p.p.CanSend() }

// Send is OutPort.Send.
func (p *NoCancelOutPort[T]) Send(v T) bool { return p.p.send(&v) }

// Name returns the port's full name, "unit.port".
func (p *NoCancelOutPort[T]) Name() string { return p.p.Name() }

func (p *NoCancelOutPort[T]) outPort() *OutPort[T] { return &p.p }

// noCancel marks the port as one that never cancels; Add calls it before
// any connection is made.
func (p *NoCancelOutPort[T]) noCancel() outPortAny {
	p.p.noCancel = true
	return &p.p
}

// noCancelPort is the untyped view of a NoCancelOutPort used by Add.
type noCancelPort interface{ noCancel() outPortAny }

// Output is what Connect connects from: an *OutPort or a *NoCancelOutPort.
type Output[T any] interface {
	outPort() *OutPort[T]
}

func (p *OutPort[T]) outPort() *OutPort[T] { return p }
