package chronon_test

import (
	"bytes"
	csvpkg "encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// The stress harness is a differential test: many small seeded random
// topologies, each run by the sequential engine as the reference, then by
// the sequential engine with the units added in another order (results may
// not depend on tick order within a cycle), and by the parallel engine
// repeatedly, with 1 to 8 workers, with several simulations running at once
// (so that workers outnumber cores and get descheduled at arbitrary
// points), and as chains of runs that change the worker count and the
// parallel threshold between runs. The units cancel in bursts far above any
// fixed history, poll their inputs lazily, flush, and terminate and panic
// in the same cycle.
//
// make test runs a short version; a soak runs more:
//
//	go test -run TestStress -chronon.stress.seeds 2000 -chronon.stress.reps 4 -timeout 2h .

var (
	stressSeeds = flag.Int("chronon.stress.seeds", 0, "stress harness: random topologies (0: the short default)")
	stressReps  = flag.Int("chronon.stress.reps", 0, "stress harness: parallel repetitions per topology (0: the short default)")
	stressFirst = flag.Uint64("chronon.stress.first", 0, "stress harness: first seed")
)

// snode is the stress harness's unit. Everything it does follows from its
// seed and what it receives.
type snode struct {
	chronon.Base
	In     chronon.InPort[uint64]
	Out    [2]chronon.OutPort[uint64]
	Fix    chronon.NoCancelOutPort[uint64]
	Sent   chronon.Counter
	Got    chronon.Counter `chronon:"got,x"` // a name the CSV must quote
	seed   uint64
	state  uint64
	sendP  uint64 // per output and cycle, in 1/256
	lazy   uint64 // receives only every lazy-th cycle (1: every cycle)
	burst  uint64 // most cancels per cancelling cycle
	cancP  uint64 // cancelling cycles, in 1/256
	termAt uint64 // 0: never
	panAt  uint64 // 0: never
	hold   bool   // never flushes (a flooder's target)
	events []event
}

func (n *snode) Events() []event { return n.events }

func (n *snode) rnd() uint64 {
	n.state = mix(n.state ^ n.seed)
	return n.state
}

func (n *snode) log(kind byte, v uint64) { n.events = append(n.events, event{n.Cycle(), kind, v}) }

func (n *snode) Tick() {
	c := n.Cycle()
	r := n.rnd()
	if n.termAt != 0 && c == n.termAt && r&1 == 0 {
		n.log('t', 0)
		n.Terminate("stress", 3, n.Name())
	}
	if n.panAt != 0 && c == n.panAt {
		panic("stress: " + n.Name())
	}
	switch r % 64 {
	case 0:
		if n.hold {
			break
		}
		n.log('f', uint64(n.In.Flush()))
	case 1:
		if n.hold {
			break
		}
		n.log('f', uint64(n.In.FlushKeys(func(v *uint64) uint64 { return *v % 1000 }, chronon.YoungerThan(500))))
	}
	if c%n.lazy == 0 {
		for range r>>8%4 + 1 {
			var v uint64
			var ok bool
			switch r >> 12 % 3 {
			case 0:
				v, ok = n.In.TryReceive()
			case 1:
				v, ok = n.In.ReceiveFiltered(func(v *uint64) bool { return *v%5 != 0 })
			default:
				if n.In.Ready() {
					n.log('y', 0)
				}
				ok = n.In.TryReceiveInto(&v)
			}
			if !ok {
				break
			}
			n.state ^= v
			n.log('r', v)
			n.Got.Inc()
			if v%7 == 0 {
				n.Span("got \"7\"", c-min(c, v%5))
			}
		}
	}
	for i := range n.Out {
		// Sends and cancels interleave: a cancel between two sends of one
		// cycle cancels the first only.
		if n.rnd()%256 < n.sendP {
			v := n.rnd()
			if n.Out[i].CanSend() != n.Out[i].Send(v) {
				panic("stress: CanSend disagrees with Send")
			}
			n.log('s', v) // refusals are visible in the receivers' streams
			n.Sent.Inc()
		}
		if n.rnd()%256 < n.cancP {
			k := 1 + n.rnd()%n.burst
			for range k {
				n.Out[i].CancelInFlight()
			}
			n.log('c', uint64(i)<<32|k)
			n.Event("cancel")
			if v := n.rnd(); v%2 == 0 {
				n.log('s', v)
				n.Out[i].Send(v)
			}
		}
	}
	if n.rnd()%256 < n.sendP {
		v := n.rnd()
		if n.Fix.CanSend() != n.Fix.Send(v) {
			panic("stress: CanSend disagrees with Send")
		}
		n.log('s', v)
	}
	if n.termAt != 0 && c == n.termAt && r&1 == 1 {
		n.log('t', 0)
		n.Terminate("stress", 3, n.Name())
	}
}

// stressSpec is one random topology: what stressTopology builds.
type stressSpec struct {
	units     []stressUnit
	conns     []stressConn
	flood     int // a unit that a flooder overflows (see flooder); -1: none
	lookahead int // WithMaxLookahead
	nap       napMode
}

// flooder sends floodRate messages a cycle on an unlimited edge, so that a
// lazy receiver falls UnboundedDepth messages behind within a stress run:
// the overflow's cycle and connection must not depend on tick order.
type flooder struct {
	chronon.Base
	Out chronon.NoCancelOutPort[uint64]
}

const floodRate = 12

func (f *flooder) Tick() {
	for i := range uint64(floodRate) {
		f.Out.Send(f.Cycle()*floodRate + i)
	}
}

type stressUnit struct {
	seed, sendP, lazy, burst, cancP, termAt, panAt uint64
	hold                                           bool
	nap                                            napSpec // sleeping (sleep_stress_test.go)
}

type stressConn struct {
	from, out, to      int
	delay, capac, rate int
}

// newStressSpec returns the random topology of seed: 3 to 20 units; each
// output (two that cancel, one NoCancelOutPort) has 1 to 3 connections, possibly to its own unit (a self-loop),
// possibly several to the same input; forward edges may have delay 0
// (clusters), others 1 to 8; capacities unlimited, 1, 2, 4 or 8, rates
// unlimited (with a capacity), 1, 2 or 3. Some units cancel in bursts of up
// to 20 per cycle, some poll their input only every few cycles, and in some
// topologies several units terminate or panic in one cycle.
func newStressSpec(seed uint64) stressSpec {
	r := seed
	next := func(n uint64) uint64 { r = mix(r); return r % n }
	sp := stressSpec{flood: -1}
	n := int(3 + next(18))
	for i := range n {
		u := stressUnit{seed: mix(seed ^ uint64(i+1)<<40), sendP: 16 + next(160), lazy: 1, burst: 1}
		if next(3) == 0 {
			u.lazy = 2 + next(6)
		}
		if next(2) == 0 {
			u.burst = 1 + next(20)
			u.cancP = 4 + next(60)
		}
		sp.units = append(sp.units, u)
	}
	switch next(4) {
	case 0: // terminations, and maybe panics, in one cycle
		at := 50 + next(300)
		for i := range sp.units {
			switch next(4) {
			case 0:
				sp.units[i].termAt = at
			case 1:
				if next(2) == 0 {
					sp.units[i].panAt = at
				}
			}
		}
	case 1: // a termination and a panic in nearby cycles
		at := 50 + next(300)
		sp.units[next(uint64(n))].termAt = at
		sp.units[next(uint64(n))].panAt = at + next(3)
	}
	if next(6) == 0 {
		sp.flood = int(next(uint64(n)))
		sp.units[sp.flood].lazy = 3 + next(5)
		sp.units[sp.flood].hold = true
	}
	for i := range sp.units {
		for o := range 3 {
			for range 1 + next(3) {
				j := int(next(uint64(n)))
				if next(6) == 0 {
					j = i // self-loop
				}
				d := int(1 + next(8))
				if j > i && next(3) == 0 {
					d = 0
				} else if next(2) == 0 {
					d = int(1 + next(4))
				}
				c := []int{0, 1, 2, 4, 8}[next(5)]
				rt := []int{1, 1, 2, 3, 0}[next(5)]
				if c == 0 && rt == 0 {
					rt = 2
				}
				sp.conns = append(sp.conns, stressConn{from: i, out: o, to: j, delay: d, capac: c, rate: rt})
				if next(8) == 0 { // the same output connected twice to the same input
					sp.conns = append(sp.conns, stressConn{from: i, out: o, to: j, delay: int(1 + next(4)), capac: []int{0, 2, 8}[next(3)], rate: 3})
				}
			}
		}
	}
	// Six topologies in ten have a lookahead beyond 1 (a stream of their
	// own, so the topologies above stay those of earlier sessions) and then
	// long-delay edges, which the lookahead engine runs ahead on: edges
	// between the two halves of the units get at least the lookahead (so
	// that the engine can cut there), some others up to twice it.
	r = mix(seed ^ 0x10ca)
	sp.lookahead = []int{1, 1, 1, 1, 2, 3, 4, 8, 8, 16}[next(10)]
	if sp.lookahead > 1 {
		for i := range sp.conns {
			c := &sp.conns[i]
			switch {
			case c.from*2/n != c.to*2/n:
				c.delay += sp.lookahead + int(next(uint64(sp.lookahead)))
			case c.delay > 0 && next(2) == 0:
				c.delay += int(next(uint64(2 * sp.lookahead)))
			}
		}
	}
	return sp
}

// stops reports whether the topology terminates or panics.
func (sp stressSpec) stops() bool {
	for _, u := range sp.units {
		if u.termAt != 0 || u.panAt != 0 {
			return true
		}
	}
	return false
}

// build adds the units in the order perm gives (nil: index order) and
// connects in the spec's order, so that connection ids, and with them
// fan-in order, are the same for every perm.
func (sp stressSpec) build(perm []int, quiet bool) (*chronon.Simulation, error) {
	s := chronon.New(chronon.WithMaxLookahead(sp.lookahead))
	nodes := make([]*snode, len(sp.units))
	units := make([]chronon.Unit, len(sp.units))
	for i, u := range sp.units {
		nodes[i], units[i] = sp.node(u)
		*nodes[i] = snode{seed: u.seed, sendP: u.sendP, lazy: u.lazy, burst: u.burst, cancP: u.cancP, hold: u.hold}
		if !quiet {
			nodes[i].termAt, nodes[i].panAt = u.termAt, u.panAt
		}
	}
	var fl *flooder
	if sp.flood >= 0 {
		fl = &flooder{}
		if perm == nil { // first in plan order, or, reversed, last
			if err := s.Add("flood", fl); err != nil {
				return nil, err
			}
		}
	}
	for k := range nodes {
		i := k
		if perm != nil {
			i = perm[k]
		}
		if err := s.Add(fmt.Sprintf("u%d", i), units[i]); err != nil {
			return nil, err
		}
		if err := sp.setClock(s, i); err != nil {
			return nil, err
		}
	}
	if fl != nil && perm != nil {
		if err := s.Add("flood", fl); err != nil {
			return nil, err
		}
	}
	for _, c := range sp.conns {
		opts := []chronon.Option{chronon.Delay(c.delay), chronon.Capacity(c.capac), chronon.Rate(c.rate)}
		var err error
		if c.out == 2 {
			err = chronon.Connect(&nodes[c.from].Fix, &nodes[c.to].In, opts...)
		} else {
			err = chronon.Connect(&nodes[c.from].Out[c.out], &nodes[c.to].In, opts...)
		}
		if err != nil {
			return nil, err
		}
	}
	if fl != nil {
		if err := chronon.Connect(&fl.Out, &nodes[sp.flood].In, chronon.Rate(floodRate)); err != nil {
			return nil, err
		}
	}
	return s, s.Build()
}

// stressStep is one Run of a chain: the workers and threshold set before it.
type stressStep struct {
	workers   int
	threshold time.Duration
	segment   uint64 // adaptive segment length; 0: the default
	cycles    uint64
}

// run builds the topology and runs the chain, returning the outcome.
func (sp stressSpec) run(perm []int, quiet bool, chain []stressStep) (outcome, error) {
	s, err := sp.build(perm, quiet)
	if err != nil {
		return outcome{}, err
	}
	var runErr error
	for _, st := range chain {
		s.SetParallelThreshold(st.threshold)
		if err := s.SetWorkers(st.workers); err != nil {
			return outcome{}, err
		}
		if st.segment != 0 {
			chronon.SetSegmentCycles(s, st.segment)
		}
		runErr = s.Run(st.cycles)
		if _, _, _, ok := chronon.LookaheadStats(s); ok {
			lookaheadRuns.Add(1)
		}
		if runErr != nil {
			break
		}
	}
	return stressOutcome(s, runErr), nil
}

// lookaheadRuns counts the runs of a chain step made by the lookahead
// engine (a lookahead above 1 and more than one worker).
var lookaheadRuns atomic.Int64

// stressOutcome is the outcome of a finished run (see scenario.outcome).
func stressOutcome(s *chronon.Simulation, err error) outcome {
	o := outcome{cycle: s.Cycle(), events: map[string][]event{}}
	o.term, o.hasTrm = s.Termination()
	cut := ^uint64(0)
	if err != nil {
		o.err = err.Error()
		var ue *chronon.UnitError
		if errors.As(err, &ue) {
			cut = ue.Cycle
		}
	}
	for _, name := range s.Units() {
		u, _ := s.Unit(name)
		r, ok := u.(recorder)
		if !ok {
			continue
		}
		ev := r.Events()
		for len(ev) > 0 && ev[len(ev)-1].Cycle >= cut {
			ev = ev[:len(ev)-1]
		}
		o.events[name] = ev
	}
	return o
}

// stressCycles is the length of every stress run.
const stressCycles = 600

// stressChains returns the run configurations tried on one topology: single
// runs at every worker count, uncalibrated, and chains that change the
// worker count, the threshold and the segment length between runs.
func stressChains(seed uint64) [][]stressStep {
	var chains [][]stressStep
	for w := 1; w <= 8; w++ {
		chains = append(chains, []stressStep{{workers: w, cycles: stressCycles}})
	}
	r := seed ^ 0x5eed
	next := func(n uint64) uint64 { r = mix(r); return r % n }
	for range 3 {
		var ch []stressStep
		left := uint64(stressCycles)
		for left > 0 {
			st := stressStep{workers: int(1 + next(8)), cycles: min(left, 1+next(200))}
			switch next(3) {
			case 1: // calibrated: measured, maybe repartitioned, adaptive segments
				st.threshold, st.segment = time.Nanosecond, 8+next(32)
			case 2:
				st.threshold = chronon.DefaultParallelThreshold
			}
			if next(4) == 0 {
				st.cycles = min(left, 1024+next(64)) // long enough to calibrate
			}
			ch = append(ch, st)
			left -= st.cycles
		}
		chains = append(chains, ch)
	}
	// A run long enough to calibrate: sequential slices, a profiled
	// repartition, then adaptive segments of 16 cycles.
	chains = append(chains, []stressStep{{workers: int(2 + next(7)), threshold: time.Nanosecond, segment: 16, cycles: stressLong}})
	return chains
}

// stressLong is the length of the calibrated chain: past the calibration's
// 1,024 sequential cycles and its profiled ones.
const stressLong = 1600

// total returns the cycles a chain runs.
func total(ch []stressStep) uint64 {
	var n uint64
	for _, st := range ch {
		n += st.cycles
	}
	return n
}

// reverse returns the permutation n-1, ..., 0.
func reverse(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = n - 1 - i
	}
	return p
}

// stressSeed checks one topology: reps repetitions of every chain, with
// par simulations running at once. It returns the runs made and the first
// divergence, described with everything needed to reproduce it.
func stressSeed(seed uint64, reps, par int) (runs int, fail string) {
	return stressSpecSeed(newStressSpec(seed), seed, reps, par)
}

// stressSpecSeed is stressSeed for the topology sp of seed.
func stressSpecSeed(sp stressSpec, seed uint64, reps, par int) (runs int, fail string) {
	ref := func(perm []int, quiet bool) outcome {
		o, err := sp.run(perm, quiet, []stressStep{{workers: 1, cycles: stressCycles}})
		if err != nil {
			panic(fmt.Sprintf("seed %d: %v", seed, err))
		}
		return o
	}
	want := ref(nil, false)
	runs++
	long, err := sp.run(nil, false, []stressStep{{workers: 1, cycles: stressLong}})
	if err != nil {
		panic(fmt.Sprintf("seed %d: %v", seed, err))
	}
	runs++
	// Tick order within a cycle must not matter: the same topology with the
	// units added in reverse order (same connections, so the same fan-in
	// order) gives the same events. Stops are ordered by plan position, so
	// this compares the topology without its terminations and panics.
	quiet := want
	if sp.stops() {
		quiet = ref(nil, true)
		runs++
	}
	if d := firstDivergence(quiet, ref(reverse(len(sp.units)), true)); d != "" {
		return runs + 1, fmt.Sprintf("seed %d, sequential, units added in reverse order: %s", seed, d)
	}
	runs++

	chains := stressChains(seed)
	var (
		mu    sync.Mutex
		first string
		n     atomic.Int64
		wg    sync.WaitGroup
		jobs  = make(chan []stressStep)
	)
	for range par {
		wg.Go(func() {
			for ch := range jobs {
				got, err := sp.run(nil, false, ch)
				n.Add(1)
				d := ""
				if err != nil {
					d = err.Error()
				} else {
					ref := want
					if total(ch) == stressLong {
						ref = long
					}
					d = firstDivergence(ref, got)
				}
				if d != "" {
					mu.Lock()
					if first == "" {
						first = fmt.Sprintf("seed %d, chain %+v: %s", seed, ch, d)
					}
					mu.Unlock()
				}
			}
		})
	}
	for range reps {
		for _, ch := range chains {
			jobs <- ch
		}
	}
	close(jobs)
	wg.Wait()
	return runs + int(n.Load()), first
}

func TestStressDifferential(t *testing.T) {
	seeds, reps := 24, 1
	if raceEnabled {
		seeds = 8
	}
	if testing.Short() {
		seeds = 4
	}
	if *stressSeeds > 0 {
		seeds = *stressSeeds
	}
	if *stressReps > 0 {
		reps = *stressReps
	}
	par := max(2, runtime.GOMAXPROCS(0)) // more simulations than cores: contention
	runs, failed := 0, 0
	overflows := 0
	for i := range seeds {
		seed := *stressFirst + uint64(i)
		n, d := stressSeed(seed, reps, par)
		runs += n
		if newStressSpec(seed).flood >= 0 {
			overflows++
		}
		if d != "" {
			failed++
			t.Error(d)
			if failed >= 5 {
				break
			}
		}
	}
	t.Logf("%d topologies (%d flooded), %d runs, %d run steps on the lookahead engine", seeds, overflows, runs, lookaheadRuns.Load())
	require.Positive(t, lookaheadRuns.Load(), "the lookahead engine must be exercised")
}

// observed runs a stress topology with counters and a trace and returns
// both files and the run's error.
func (sp stressSpec) observed(t *testing.T, chain []stressStep, every uint64) (csv, trace, errText string) {
	t.Helper()
	s, err := sp.build(nil, false)
	require.NoError(t, err)
	var cb, tb bytes.Buffer
	require.NoError(t, s.DumpCounters(&cb, every))
	s.TraceTo(&tb)
	var runErr error
	for _, st := range chain {
		s.SetParallelThreshold(st.threshold)
		require.NoError(t, s.SetWorkers(st.workers))
		if st.segment != 0 {
			chronon.SetSegmentCycles(s, st.segment)
		}
		if runErr = s.Run(st.cycles); runErr != nil {
			break
		}
	}
	require.NoError(t, s.Close())
	if runErr != nil {
		errText = runErr.Error()
	}
	return cb.String(), tb.String(), errText
}

// TestObservationIdenticalAcrossEngines: counter CSV and trace JSON of a
// parallel run, at any worker count and through chains of runs, are
// byte-identical to the sequential run's, also when the run terminates or
// a unit panics.
func TestObservationIdenticalAcrossEngines(t *testing.T) {
	seeds, stopped := 10, 0
	if raceEnabled {
		seeds = 3
	}
	for i := range seeds {
		seed := uint64(i) * 31
		sp := newStressSpec(seed)
		every := 1 + mix(seed)%50
		wantCSV, wantTrace, wantErr := sp.observed(t, []stressStep{{workers: 1, cycles: 2 * stressCycles}}, every)
		require.NoError(t, json.Unmarshal([]byte(wantTrace), new(map[string]any)), "seed %d: the trace is JSON", seed)
		r, err := csvpkg.NewReader(strings.NewReader(wantCSV)).ReadAll()
		require.NoError(t, err, "seed %d: the counters are CSV", seed)
		require.Contains(t, r[0], "u0.got,x")
		if sp.stops() {
			stopped++
		}
		chains := stressChains(seed)
		for _, ch := range chains {
			last := &ch[len(ch)-1]
			last.cycles = 2*stressCycles - (total(ch) - last.cycles) // 2*stressCycles in all chains
			gotCSV, gotTrace, gotErr := sp.observed(t, ch, every)
			require.Equal(t, wantErr, gotErr, "seed %d chain %+v", seed, ch)
			require.Equal(t, wantCSV, gotCSV, "seed %d chain %+v: counters", seed, ch)
			require.Equal(t, wantTrace, gotTrace, "seed %d chain %+v: trace", seed, ch)
		}
	}
	require.Positive(t, stopped, "some runs must stop early")
}
