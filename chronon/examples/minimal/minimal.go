// Package minimal is the smallest chronon model, a producer sending one
// message per cycle to a consumer over a delay-1 edge, and a generator of
// large random topologies for measuring Build. Both serve as benchmarks.
package minimal

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/lanework/lanework/chronon"
)

// Source sends its cycle number every cycle.
type Source struct {
	chronon.Base
	Out chronon.OutPort[uint64] `chronon:"out"`
}

// Tick sends one message.
func (s *Source) Tick() { s.Out.Send(s.Cycle()) }

// Sink receives every ready message and sums them.
type Sink struct {
	chronon.Base
	In chronon.InPort[uint64] `chronon:"in"`
	// Sum is the sum of the received messages.
	Sum uint64
}

// Tick receives everything ready.
func (s *Sink) Tick() {
	for {
		v, ok := s.In.TryReceive()
		if !ok {
			return
		}
		s.Sum += v
	}
}

// Report returns the sum.
func (s *Sink) Report() string { return "sum " + strconv.FormatUint(s.Sum, 10) }

// Topology is the minimal model in YAML.
var Topology = []byte(`units:
  - {name: producer, type: minimal.source}
  - {name: consumer, type: minimal.sink}
connections:
  - {from: producer.out, to: consumer.in, delay: 1}
`)

// Register adds minimal.source and minimal.sink to r.
func Register(r *chronon.Registry) {
	chronon.Register(r, "minimal.source", func(string, struct{}) (chronon.Unit, error) { return &Source{}, nil })
	chronon.Register(r, "minimal.sink", func(string, struct{}) (chronon.Unit, error) { return &Sink{}, nil })
}

// New returns the built minimal model and its sink.
func New() (*chronon.Simulation, *Sink, error) {
	s := chronon.New()
	src, dst := &Source{}, &Sink{}
	if err := s.Add("producer", src); err != nil {
		return nil, nil, err
	}
	if err := s.Add("consumer", dst); err != nil {
		return nil, nil, err
	}
	if err := chronon.Connect(&src.Out, &dst.In); err != nil {
		return nil, nil, err
	}
	return s, dst, s.Build()
}

// Node is a unit of a generated topology: four outputs, one input.
type Node struct {
	Out [4]chronon.OutPort[uint64] `chronon:"out"`
	In  chronon.InPort[uint64]     `chronon:"in"`
}

// Tick does nothing; generated topologies measure Build.
func (n *Node) Tick() {}

// Random adds units nodes with four outgoing edges each to a new
// simulation, without building it. Edges to a later unit have delay 0 or 1
// at random, edges to an earlier one delay 1 or more, so the zero-delay
// subgraph is acyclic but far from trivial.
func Random(units int, seed uint64) (*chronon.Simulation, error) {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := chronon.New()
	ns := make([]*Node, units)
	for i := range ns {
		ns[i] = &Node{}
		if err := s.Add("n"+strconv.Itoa(i), ns[i]); err != nil {
			return nil, err
		}
	}
	for i, n := range ns {
		for j := range n.Out {
			to := rng.IntN(units)
			d := 1 + rng.IntN(3)
			if to > i {
				d = rng.IntN(2)
			}
			if err := chronon.Connect(&n.Out[j], &ns[to].In, chronon.Delay(d), chronon.Capacity(2)); err != nil {
				return nil, fmt.Errorf("minimal: %w", err)
			}
		}
	}
	return s, nil
}
