package chronon

import "slices"

// PortTransaction sends messages on several out-ports all or none: a unit
// reserves a message on each port it wants (Reserve), then Commit sends them
// all, or sends nothing when any port lacks a rate slot or room for its
// share. A dispatch to, say, an issue queue and a reorder buffer is then one
// decision, without a CanSend check per port.
//
// Admission is decided exactly as Send decides it, from the cycle-start
// admission snapshot (pops credited in earlier cycles) plus the unit's own
// pushes: Commit of n messages on a port succeeds iff n Sends in a row
// would. Within one cycle that snapshot does not move, so a transaction's
// outcome never depends on which unit ticked first, in any engine.
//
// A port takes part in one transaction at a time (its reserved messages
// are kept on the port): reserving on a port that another open transaction
// holds panics, which the engine reports as the unit's *UnitError.
//
// The zero value is ready. A transaction belongs to one unit; reserve and
// commit within one Tick (Commit re-checks, so a transaction carried into a
// later cycle is decided by that cycle's snapshot). Reserving and committing
// allocate nothing once the buffers have grown to the largest transaction.
type PortTransaction struct {
	ports []txPort // each port with a reservation, once, in first-reserve order
	fail  bool     // a reservation was refused: Commit sends nothing
}

// txPort is a port's side of a transaction: its reserved messages.
type txPort interface {
	admitsReserved() bool
	commitReserved()
	dropReserved()
	reservedLen() int
}

// Reserve adds v for out to tx and reports whether the transaction could
// still commit now: false when out has no rate slot or room for its
// messages reserved so far. A refused reservation dooms the transaction
// (Commit sends nothing); Abort or Commit starts it afresh.
func Reserve[T any](tx *PortTransaction, out Output[T], v T) bool {
	p := out.outPort()
	if len(p.reserved) == 0 {
		tx.ports = append(tx.ports, p)
	} else if !slices.Contains(tx.ports, txPort(p)) {
		panic("chronon: " + p.Name() + " is in another open PortTransaction") // a modelling bug: the engine reports a *UnitError
	}
	p.reserved = append(p.reserved, v)
	if !tx.fail && !p.admitsReserved() {
		tx.fail = true
	}
	return !tx.fail
}

// Commit sends every reserved message, in reserve order per port, if every
// port admits all of its share, and reports whether it did. Either way the
// transaction is empty afterwards.
func (tx *PortTransaction) Commit() bool {
	ok := !tx.fail
	for _, p := range tx.ports {
		if !ok {
			break
		}
		ok = p.admitsReserved()
	}
	for _, p := range tx.ports {
		if ok {
			p.commitReserved()
		} else {
			p.dropReserved()
		}
	}
	clear(tx.ports)
	tx.ports, tx.fail = tx.ports[:0], false
	return ok
}

// Abort drops every reserved message; nothing is sent.
func (tx *PortTransaction) Abort() {
	for _, p := range tx.ports {
		p.dropReserved()
	}
	clear(tx.ports)
	tx.ports, tx.fail = tx.ports[:0], false
}

// Len returns the number of reserved messages.
func (tx *PortTransaction) Len() int {
	n := 0
	for _, p := range tx.ports {
		n += p.reservedLen()
	}
	return n
}

func (p *OutPort[T]) reservedLen() int { return len(p.reserved) }

// admitsReserved reports whether every connection admits all reserved
// messages in the owner's current cycle.
func (p *OutPort[T]) admitsReserved() bool {
	c, n := p.u.cycle, uint64(len(p.reserved))
	for _, k := range p.conns {
		if !k.admitsN(c, n) {
			return false
		}
	}
	return true
}

// commitReserved sends the reserved messages; the caller has checked
// admitsReserved, so every send succeeds.
func (p *OutPort[T]) commitReserved() {
	for i := range p.reserved {
		if !p.send(&p.reserved[i]) {
			panic("chronon: " + p.Name() + ": a committed reservation was refused") // not reached: admitsN
		}
	}
	p.dropReserved()
}

func (p *OutPort[T]) dropReserved() {
	clear(p.reserved) // no payload stays reachable
	p.reserved = p.reserved[:0]
}

// admitsN reports whether the connection accepts n more messages in
// producer cycle c: admits, asked n times with a push recorded after each.
// It repeats admits's occupancy arithmetic rather than sharing a helper:
// with one, admits no longer inlines into the per-message send path
// (BenchmarkMinimal: +7 to +9 instructions per cycle by callgrind,
// 2026-12-02); TestAdmitsNIsRepeatedAdmits keeps the two in step.
func (k *conn[T]) admitsN(c, n uint64) bool {
	if n == 0 {
		return true
	}
	if k.rate != 0 {
		used := uint64(0)
		if k.pushCycle == c {
			used = uint64(k.cyclePushes)
		}
		if used+n > uint64(k.rate) {
			return false
		}
	}
	if k.capacity == 0 {
		return true
	}
	cr := k.credits(c)
	occ := k.pushes - cr
	if k.dff {
		before := k.pushes
		if k.pushCycle == c {
			before -= uint64(k.cyclePushes)
		}
		if before > cr {
			occ--
		}
	}
	return occ+n <= uint64(k.capacity)
}
