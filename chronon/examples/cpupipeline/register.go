package cpupipeline

import (
	"bytes"
	_ "embed"
	"fmt"

	"github.com/lanework/lanework/chronon"
)

// Topology is the reference topology: 4-wide fetch, a 10-cycle L2 and a
// flush probability of 0.001, terminating at 1,000,000 commits.
//
//go:embed cpu.yaml
var Topology []byte

// WithCommitTarget returns Topology with writeback's commit target set to
// n; 0 disables termination, for runs of a fixed number of cycles.
func WithCommitTarget(n uint64) []byte {
	return bytes.Replace(Topology, []byte("commit_target: 1000000"), fmt.Appendf(nil, "commit_target: %d", n), 1)
}

// ALUParams configures an ALU.
type ALUParams struct {
	ID int `yaml:"id"` // index of the L2 response port that serves it
}

// Register adds the pipeline's unit types to r: cpu.fetch, cpu.decode,
// cpu.alu, cpu.l2, cpu.flush and cpu.writeback.
func Register(r *chronon.Registry) {
	chronon.Register(r, "cpu.fetch", func(_ string, p FetchParams) (chronon.Unit, error) {
		if p.FlushProb < 0 || p.FlushProb > 0.125 {
			return nil, fmt.Errorf("flush_prob %v out of range [0, 0.125]", p.FlushProb)
		}
		if p.Width < 0 {
			return nil, fmt.Errorf("width %d is negative (0 means the default, 4)", p.Width)
		}
		return NewFetch(p), nil
	})
	chronon.Register(r, "cpu.decode", func(string, struct{}) (chronon.Unit, error) { return NewDecode(), nil })
	chronon.Register(r, "cpu.alu", func(_ string, p ALUParams) (chronon.Unit, error) {
		if p.ID < 0 || p.ID > 3 {
			return nil, fmt.Errorf("id %d out of range [0, 3]", p.ID)
		}
		return NewALU(p.ID), nil
	})
	chronon.Register(r, "cpu.l2", func(string, struct{}) (chronon.Unit, error) { return NewL2(), nil })
	chronon.Register(r, "cpu.flush", func(string, struct{}) (chronon.Unit, error) { return NewFlushEngine(), nil })
	chronon.Register(r, "cpu.writeback", func(_ string, p WritebackParams) (chronon.Unit, error) {
		if p.Width < 0 {
			return nil, fmt.Errorf("width %d is negative (0 means the default, 4)", p.Width)
		}
		return NewWriteback(p), nil
	})
}

// Load builds the pipeline from a topology (Topology if src is nil) and
// returns it with its writeback unit, named "writeback".
func Load(src []byte) (*chronon.Simulation, chronon.Config, *Writeback, error) {
	if src == nil {
		src = Topology
	}
	r := chronon.NewRegistry()
	Register(r)
	s, cfg, err := chronon.Parse("cpu.yaml", src, r)
	if err != nil {
		return nil, chronon.Config{}, nil, err
	}
	u, ok := s.Unit("writeback")
	w, isWB := u.(*Writeback)
	if !ok || !isWB {
		return nil, chronon.Config{}, nil, fmt.Errorf("cpupipeline: topology has no cpu.writeback unit named writeback")
	}
	return s, cfg, w, nil
}
