package chronon

// ReliableSender is an out-port with one retry slot: a message the port
// refuses is kept and offered again in each later cycle until it is sent,
// exactly once and before any newer message. Declare it as a unit field in
// place of an OutPort (Connect and YAML connect it under the field's name);
// its stall counter is reported as "field.stalls".
//
// Call Pump once per Tick (Offer and Free pump too): the held message is
// re-offered at most once per cycle, so Stalls counts the cycles in which a
// held message was refused. The decisions are Send's, from the cycle-start
// admission snapshot, so they are the same in every engine. Only the owning
// unit's Tick may call its methods, and only they may send on it: a
// PortTransaction reserving on it would bypass the retry slot's order.
type ReliableSender[T any] struct {
	p      OutPort[T]
	held   T
	full   bool
	tried  uint64 // the cycle of the last attempt to send held
	stalls Counter
}

// Offer sends v, or keeps it for later cycles when the port refuses it, and
// reports whether it took v. It takes v unless a message is still held
// after this cycle's retry: then it returns false and the caller keeps v.
func (r *ReliableSender[T]) Offer(v T) bool {
	if !r.Free() {
		return false
	}
	if r.p.send(&v) {
		return true
	}
	r.held, r.full, r.tried = v, true, r.p.u.cycle
	r.stalls.Inc()
	return true
}

// Pump offers the held message again, once per cycle, and reports whether
// the slot is free afterwards.
func (r *ReliableSender[T]) Pump() bool {
	if !r.full {
		return true
	}
	c := r.p.u.cycle
	if r.tried == c {
		return false
	}
	r.tried = c
	if !r.p.send(&r.held) {
		r.stalls.Inc()
		return false
	}
	var zero T
	r.held, r.full = zero, false // the slot keeps no payload reachable
	return true
}

// Free pumps and reports whether Offer would take a message now.
func (r *ReliableSender[T]) Free() bool { return r.Pump() }

// Holding reports whether a refused message waits in the slot.
func (r *ReliableSender[T]) Holding() bool { return r.full }

// Stalls returns the number of refused attempts: one for the cycle a
// message was first refused and one per later cycle it was refused again.
func (r *ReliableSender[T]) Stalls() uint64 { return r.stalls.Value() }

// Name returns the port's full name, "unit.port".
func (r *ReliableSender[T]) Name() string { return r.p.Name() }

func (r *ReliableSender[T]) outPort() *OutPort[T] { return &r.p }

func (r *ReliableSender[T]) parts() (any, []namedCtr) {
	return &r.p, []namedCtr{{name: "stalls", c: &r.stalls}}
}
