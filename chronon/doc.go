// Package chronon is a cycle-accurate simulator core: units that tick once
// per simulated cycle, typed ports, and connections with a registered delay,
// capacity and rate.
//
// A model is a set of units. A unit is any type with a Tick method; it
// declares its ports as struct fields (OutPort[T] and InPort[T], also arrays
// of them) and embeds Base to read its local cycle, request termination and
// record trace events. NoCancelOutPort[T] is an OutPort without
// CancelInFlight, and without a cancel log. Simulation.Add finds the ports
// by reflection, so a unit never registers them by hand. Connect wires an
// OutPort to an InPort of the same message type:
//
//	arrive = send + delay
//
// Delay 0 delivers in the same cycle and is allowed only on acyclic paths;
// Build rejects zero-delay cycles. Back pressure is simulation state: whether
// a send is admitted depends only on simulated events (cycle-start occupancy
// plus the producer's own pushes in the cycle), never on host timing, so a
// run is a pure function of its model and inputs.
//
// Each connection is carried by a ringbuf.SPSC lane. An InPort with more than
// one connection merges its lanes through a frontier.Merger, ordering fan-in
// by (arrive, connection id) in every execution mode.
//
// The sequential engine ticks the units in every cycle in a topological
// order of the zero-delay edges. SetWorkers(n > 1) selects the parallel
// engine: clusters of zero-delay-connected units run on n goroutines, a
// cluster running cycle c once every cluster has completed c-1, with results
// bit-identical to the sequential engine's for every n. Topologies it cannot
// run safely, or whose cycles are too cheap to gain from it, stay sequential
// with a logged reason (Simulation.Engine). See docs/chronon.md.
package chronon
