// Package cpupipeline is a 4-wide CPU pipeline modelled with chronon: fetch
// with a branch predictor and an instruction budget, decode with round-robin
// dispatch, four ALUs, an L2 cache loop with latency, a flush engine that
// fans a flush out to every stage on a mispredict, and a writeback stage with
// a reorder buffer that terminates the run at a commit target.
//
// The program is synthetic and a pure function of the instruction sequence
// number and a seed, so a run is deterministic: writeback reports a digest
// of everything it committed. Register adds the unit types to a registry for
// YAML topologies; Topology is the reference topology.
package cpupipeline
