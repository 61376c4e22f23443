package chronon_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// The determinism harness runs one topology with the sequential engine and
// with the parallel engine at each worker count, and compares every unit's
// event stream.

// harnessWorkers are the worker counts the harness compares with the
// sequential engine.
var harnessWorkers = []int{1, 2, 3, 4, 8}

// event is one observable action of a unit.
type event struct {
	Cycle uint64
	Kind  byte // 's' sent, 'x' refused, 'r' received, 'f' flushed (V = count), 'c' cancel, 't' terminate
	V     uint64
}

// recorder is implemented by harness units: their events in order.
type recorder interface{ Events() []event }

// outcome is everything a run produced.
type outcome struct {
	cycle   uint64
	term    chronon.Termination
	hasTrm  bool
	err     string
	events  map[string][]event
	workers int // the workers the engine used
}

// scenario builds a fresh simulation; run drives it.
type scenario struct {
	build func(t *testing.T) *chronon.Simulation
	run   func(s *chronon.Simulation) error
}

func (sc scenario) outcome(t *testing.T, workers int) outcome {
	t.Helper()
	s := sc.build(t)
	s.SetParallelThreshold(0)
	require.NoError(t, s.SetWorkers(workers))
	used, _ := s.Engine()
	err := sc.run(s)
	o := outcome{cycle: s.Cycle(), events: map[string][]event{}, workers: used}
	o.term, o.hasTrm = s.Termination()
	cut := ^uint64(0)
	if err != nil {
		o.err = err.Error()
		// A panic ends the sequential engine's cycle at once, so later units
		// never tick in it; events from that cycle on are not comparable.
		var ue *chronon.UnitError
		if errors.As(err, &ue) {
			cut = ue.Cycle
		}
	}
	for _, name := range s.Units() {
		u, _ := s.Unit(name)
		if r, ok := u.(recorder); ok {
			ev := r.Events()
			for len(ev) > 0 && ev[len(ev)-1].Cycle >= cut {
				ev = ev[:len(ev)-1]
			}
			o.events[name] = ev
		}
	}
	return o
}

// firstDivergence describes the first difference between two outcomes, or
// returns "" if they are identical.
func firstDivergence(want, got outcome) string {
	if want.err != got.err {
		return fmt.Sprintf("error: sequential %q, parallel %q", want.err, got.err)
	}
	if want.cycle != got.cycle {
		return fmt.Sprintf("final cycle: sequential %d, parallel %d", want.cycle, got.cycle)
	}
	if want.hasTrm != got.hasTrm || want.term != got.term {
		return fmt.Sprintf("termination: sequential %+v, parallel %+v", want.term, got.term)
	}
	for name, we := range want.events {
		ge := got.events[name]
		for i := range max(len(we), len(ge)) {
			switch {
			case i >= len(we):
				return fmt.Sprintf("unit %s event %d: sequential ends, parallel %+v", name, i, ge[i])
			case i >= len(ge):
				return fmt.Sprintf("unit %s event %d (cycle %d): sequential %+v, parallel ends", name, i, we[i].Cycle, we[i])
			case we[i] != ge[i]:
				return fmt.Sprintf("unit %s event %d (cycle %d): sequential %+v, parallel %+v", name, i, we[i].Cycle, we[i], ge[i])
			}
		}
	}
	return ""
}

// checkDeterminism runs sc sequentially and then reps times per harness
// worker count, failing on the first divergence. It returns the sequential
// outcome and the largest worker count the parallel engine actually used.
func checkDeterminism(t *testing.T, sc scenario, reps int) (outcome, int) {
	t.Helper()
	want := sc.outcome(t, 1)
	used := 1
	for _, w := range harnessWorkers {
		for rep := range reps {
			got := sc.outcome(t, w)
			used = max(used, got.workers)
			if d := firstDivergence(want, got); d != "" {
				t.Fatalf("%d workers, repetition %d: %s", w, rep, d)
			}
		}
	}
	return want, used
}

// mix is a 64-bit finalizer (splitmix64), the harness's only randomness.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// node is a harness unit driven by its own seed and its inputs only: it
// receives (plainly or filtered), flushes selectively or wholesale, cancels
// its outputs, sends on two outputs with random values, and may terminate.
type node = gnode[uint64]

// gnode is node carrying its values as P: uint64, or widePayload, which
// the ports move in place rather than by value (see wide_test.go).
type gnode[P any] struct {
	chronon.Base
	In     chronon.InPort[P]
	Out    [2]chronon.OutPort[P]
	seed   uint64
	state  uint64
	sendP  uint64 // send probability per output, in 1/256
	termAt uint64 // cycle to terminate at; 0: never
	panAt  uint64 // cycle to panic at; 0: never
	events []event
}

func (n *gnode[P]) Events() []event { return n.events }

func (n *gnode[P]) rnd() uint64 {
	n.state = mix(n.state ^ n.seed)
	return n.state
}

func (n *gnode[P]) log(kind byte, v uint64) {
	n.events = append(n.events, event{n.Cycle(), kind, v})
}

func (n *gnode[P]) Tick() {
	c := n.Cycle()
	if n.panAt != 0 && c == n.panAt {
		panic(fmt.Sprintf("node %s fails", n.Name()))
	}
	r := n.rnd()
	switch r % 32 {
	case 0:
		n.log('f', uint64(n.In.Flush()))
	case 1:
		n.log('f', uint64(n.In.FlushKeys(func(v *P) uint64 { return valueOf(v) % 1000 }, chronon.YoungerThan(500))))
	case 2:
		n.Out[r>>8&1].CancelInFlight()
		n.log('c', r>>8&1)
	}
	take := int(r>>12%4) + 1
	for range take {
		var v P
		var ok bool
		if r>>16&1 == 0 {
			v, ok = n.In.TryReceive()
		} else {
			v, ok = n.In.ReceiveFiltered(func(v *P) bool { return valueOf(v)%5 != 0 })
		}
		if !ok {
			break
		}
		n.state ^= valueOf(&v)
		n.log('r', valueOf(&v))
	}
	for i := range n.Out {
		if n.rnd()%256 < n.sendP {
			v := n.rnd()
			if n.Out[i].Send(payloadOf[P](v)) {
				n.log('s', v)
			} else {
				n.log('x', v)
			}
		}
	}
	if n.termAt != 0 && c == n.termAt {
		n.log('t', 0)
		n.Terminate("harness", 3, "done")
	}
}

// widePayload carries a harness value in a message too wide for registers,
// with check fields derived from it.
type widePayload struct {
	V    uint64
	A, B uint64
	C    uint32
	D    uint16
}

func newWide(v uint64) widePayload {
	h := mix(v)
	return widePayload{V: v, A: h, B: ^v, C: uint32(h >> 7), D: uint16(v >> 3)}
}

// valueOf returns the harness value of a uint64 or widePayload message,
// panicking on a corrupt wide one.
func valueOf[P any](p *P) uint64 {
	if v, ok := any(p).(*uint64); ok {
		return *v
	}
	w := any(p).(*widePayload)
	if *w != newWide(w.V) {
		panic(fmt.Sprintf("corrupt wide payload %+v", *w))
	}
	return w.V
}

// payloadOf returns v as a P, a uint64 or a widePayload.
func payloadOf[P any](v uint64) P {
	var p P
	if u, ok := any(&p).(*uint64); ok {
		*u = v
	} else {
		*any(&p).(*widePayload) = newWide(v)
	}
	return p
}

// randomTopology returns a seeded random topology of 4 to 12 nodes: each
// output fans out to one or two destinations; an edge to a later node has
// delay 0 (building clusters), 1, 2, 3 or 8, an edge to an earlier node or
// itself 1, 3 or 8 (feedback loops with mixed delays); capacities 0
// (unlimited), 1, 2 or 4; rates 1 or 2. About one output in five is
// instead a high-fanout source: 4 to 8 delay-1 edges without capacity,
// which the shared broadcast transport carries unless opts switch it off;
// half of their edges go to 8 leaf nodes that receive from nothing else.
func randomTopology(seed uint64, opts ...chronon.SimOption) func(t *testing.T) *chronon.Simulation {
	return randomTopologyOf[uint64](seed, opts...)
}

// randomTopologyOf is randomTopology with nodes carrying P.
func randomTopologyOf[P any](seed uint64, opts ...chronon.SimOption) func(t *testing.T) *chronon.Simulation {
	return func(t *testing.T) *chronon.Simulation {
		t.Helper()
		r := seed
		next := func(n uint64) uint64 { r = mix(r); return r % n }
		units := int(4 + next(9))
		s := chronon.New(opts...)
		// Leaves (after the units) receive only from high-fanout sources,
		// so that some of those have single-connection destinations, which
		// read the shared broadcast ring (fan-in ones keep their lanes).
		const leaves = 8
		nodes := make([]*gnode[P], units+leaves)
		for i := range nodes {
			nodes[i] = &gnode[P]{seed: mix(seed + uint64(i)), sendP: 24 + next(96)}
			require.NoError(t, s.Add(fmt.Sprintf("n%d", i), nodes[i]))
		}
		for i, n := range nodes[:units] {
			for o := range n.Out {
				if next(5) == 0 {
					rate := int(1 + next(2))
					for range 4 + next(5) {
						j := int(next(uint64(units)))
						if next(2) == 0 {
							j = units + int(next(leaves))
						}
						require.NoError(t, chronon.Connect(&n.Out[o], &nodes[j].In, chronon.Delay(1), chronon.Rate(rate)))
					}
					continue
				}
				for range 1 + next(2) {
					j := int(next(uint64(units)))
					var d uint64
					if j > i {
						d = []uint64{0, 1, 1, 2, 3, 8}[next(6)]
					} else {
						d = []uint64{1, 1, 3, 8}[next(4)]
					}
					cp := []int{0, 1, 2, 4}[next(4)]
					rate := int(1 + next(2))
					require.NoError(t, chronon.Connect(&n.Out[o], &nodes[j].In,
						chronon.Delay(int(d)), chronon.Capacity(cp), chronon.Rate(rate)))
				}
			}
		}
		if next(2) == 0 {
			nodes[next(uint64(units))].termAt = 150 + next(200)
		}
		require.NoError(t, s.Build())
		return s
	}
}

func runFor(n uint64) func(*chronon.Simulation) error {
	return func(s *chronon.Simulation) error { return s.Run(n) }
}

func TestDeterminismRandomTopologies(t *testing.T) {
	seeds := 40
	if raceEnabled {
		seeds = 12
	}
	parallel, terminated := 0, 0
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			o, used := checkDeterminism(t, scenario{build: randomTopology(uint64(seed) * 7919), run: runFor(400)}, 1)
			if used > 1 {
				parallel++
			}
			if o.hasTrm {
				terminated++
			}
		})
	}
	require.Greater(t, parallel, seeds/2, "most random topologies must run in parallel")
	require.Positive(t, terminated, "some random topologies must terminate")
}

// pair2 sends two messages every cycle.
type pair2 struct {
	chronon.Base
	Out    chronon.OutPort[uint64]
	events []event
}

func (b *pair2) Events() []event { return b.events }

func (b *pair2) Tick() {
	for i := range uint64(2) {
		v := b.Cycle()*2 + i
		if b.Out.Send(v) {
			b.events = append(b.events, event{b.Cycle(), 's', v})
		} else {
			b.events = append(b.events, event{b.Cycle(), 'x', v})
		}
	}
}

// hsink takes up to 3 messages a cycle.
type hsink struct {
	chronon.Base
	In     chronon.InPort[uint64]
	events []event
}

func (k *hsink) Events() []event { return k.events }

func (k *hsink) Tick() {
	for range 3 {
		v, ok := k.In.TryReceive()
		if !ok {
			return
		}
		k.events = append(k.events, event{k.Cycle(), 'r', v})
	}
}

// TestDeterminismFanInBackPressure: three producers sending two messages
// per tick into a capacity-4 fan-in drained at 3 per tick, 30 repetitions
// per worker count (10 under the race detector).
func TestDeterminismFanInBackPressure(t *testing.T) {
	reps := 30
	if raceEnabled {
		reps = 10
	}
	build := func(t *testing.T) *chronon.Simulation {
		s := chronon.New()
		k := &hsink{}
		require.NoError(t, s.Add("sink", k))
		for i := range 3 {
			p := &pair2{}
			require.NoError(t, s.Add(fmt.Sprintf("p%d", i), p))
			require.NoError(t, chronon.Connect(&p.Out, &k.In, chronon.Capacity(4), chronon.Rate(2), chronon.Delay(1+i%2)))
		}
		require.NoError(t, s.Build())
		return s
	}
	o, used := checkDeterminism(t, scenario{build: build, run: runFor(2000)}, reps)
	require.Equal(t, 4, used)
	var refused int
	for _, e := range o.events["p0"] {
		if e.Kind == 'x' {
			refused++
		}
	}
	require.Positive(t, refused, "the fan-in must apply back pressure")
}

// TestDeterminismRandomTopologiesLookahead is TestDeterminismRandomTopologies
// with lookaheads beyond 1: the lookahead engine against the sequential
// engine with the same lookahead (and so the same stop latency).
func TestDeterminismRandomTopologiesLookahead(t *testing.T) {
	seeds := 24
	if raceEnabled {
		seeds = 8
	}
	parallel := 0
	for seed := range seeds {
		la := []int{2, 3, 8, 16}[seed%4]
		t.Run(fmt.Sprintf("%d/lookahead=%d", seed, la), func(t *testing.T) {
			sc := scenario{build: randomTopology(uint64(seed)*7919+1, chronon.WithMaxLookahead(la)), run: runFor(400)}
			if _, used := checkDeterminism(t, sc, 1); used > 1 {
				parallel++
			}
		})
	}
	require.Greater(t, parallel, seeds/2, "most random topologies must run in parallel")
}
