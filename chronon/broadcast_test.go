package chronon_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// fanoutModel is a source fanning out to n sinks, connected with opts.
func fanoutModel(t *testing.T, n int, sopts []chronon.SimOption, opts ...chronon.Option) *chronon.Simulation {
	t.Helper()
	s := chronon.New(sopts...)
	src := &source{}
	require.NoError(t, s.Add("src", src))
	for i := range n {
		k := &sink{}
		require.NoError(t, s.Add(fmt.Sprint("k", i), k))
		require.NoError(t, chronon.Connect(&src.Out, &k.In, opts...))
	}
	require.NoError(t, s.Build())
	return s
}

func TestBroadcastSelection(t *testing.T) {
	on := []chronon.SimOption{chronon.WithBroadcast(true)}
	assert.Equal(t, []string{"src.Out"}, chronon.BroadcastPorts(fanoutModel(t, 4, nil)), "on by default")
	assert.Equal(t, []string{"src.Out"}, chronon.BroadcastPorts(fanoutModel(t, 8, on, chronon.Rate(chronon.Unlimited))))
	assert.Empty(t, chronon.BroadcastPorts(fanoutModel(t, 8, []chronon.SimOption{chronon.WithBroadcast(false)})), "switched off")
	assert.Empty(t, chronon.BroadcastPorts(fanoutModel(t, 3, on)), "fanout below BroadcastFanout")
	assert.Empty(t, chronon.BroadcastPorts(fanoutModel(t, 8, on, chronon.Delay(2))), "delay 2")
	assert.Empty(t, chronon.BroadcastPorts(fanoutModel(t, 8, on, chronon.Capacity(4))), "finite capacity")

	// One bounded edge among five keeps the port on lanes.
	s := chronon.New()
	src := &source{}
	require.NoError(t, s.Add("src", src))
	for i := range 5 {
		k := &sink{}
		require.NoError(t, s.Add(fmt.Sprint("k", i), k))
		var opts []chronon.Option
		if i == 3 {
			opts = append(opts, chronon.Capacity(2))
		}
		require.NoError(t, chronon.Connect(&src.Out, &k.In, opts...))
	}
	require.NoError(t, s.Build())
	assert.Empty(t, chronon.BroadcastPorts(s))

	// Payload storage: one ring instead of eight lanes.
	offB := chronon.PayloadBytes(fanoutModel(t, 8, []chronon.SimOption{chronon.WithBroadcast(false)}))
	onB := chronon.PayloadBytes(fanoutModel(t, 8, nil))
	assert.Equal(t, 8*onB, offB)
}

// scripted is a unit whose Tick is a function, recording what it receives.
type scripted struct {
	chronon.Base
	In   chronon.InPort[uint64]
	Out  chronon.OutPort[uint64]
	tick func(u *scripted)
	log  []event
}

func (u *scripted) Events() []event { return u.log }
func (u *scripted) Tick()           { u.tick(u) }
func (u *scripted) rec(kind byte, v uint64) {
	u.log = append(u.log, event{u.Cycle(), kind, v})
}

func (u *scripted) drain(keep func(*uint64) bool) {
	for {
		var v uint64
		var ok bool
		if keep == nil {
			v, ok = u.In.TryReceive()
		} else {
			v, ok = u.In.ReceiveFiltered(keep)
		}
		if !ok {
			return
		}
		u.rec('r', v)
	}
}

// contractModel: a source sending its cycle every cycle to four
// single-connection destinations and two fan-in destinations (each also
// fed by a plain producer sending 1000+cycle over a delay-2 edge), each
// exercising one part of the port contract. The source cancels in flight
// at cycle 20.
func contractModel(sopts ...chronon.SimOption) func(t *testing.T) *chronon.Simulation {
	return func(t *testing.T) *chronon.Simulation {
		t.Helper()
		s := chronon.New(sopts...)
		src := &scripted{tick: func(u *scripted) {
			if u.Cycle() == 20 {
				u.Out.CancelInFlight()
				u.rec('c', 0)
			}
			if u.Cycle() < 60 && u.Out.Send(u.Cycle()) {
				u.rec('s', u.Cycle())
			}
		}}
		other := &scripted{tick: func(u *scripted) {
			if u.Cycle() < 60 && u.Out.Send(1000+u.Cycle()) {
				u.rec('s', 1000+u.Cycle())
			}
		}}
		key := func(v *uint64) uint64 { return *v % 1000 }
		dests := []*scripted{
			{tick: func(u *scripted) { u.drain(nil) }},                                       // plain
			{tick: func(u *scripted) { u.drain(func(v *uint64) bool { return *v%3 != 0 }) }}, // filtered
			{tick: func(u *scripted) { // selective flush of a backlog
				if u.Cycle()%10 == 9 {
					u.rec('f', uint64(u.In.FlushKeys(key, chronon.Outside(u.Cycle()-6, u.Cycle()-3))))
					u.drain(nil)
				}
			}},
			{tick: func(u *scripted) { // whole flush, then the rest of the cycle
				if u.Cycle()%8 == 5 {
					u.rec('f', uint64(u.In.Flush()))
				}
				if u.Cycle()%4 == 0 {
					u.drain(nil)
				}
			}},
			{tick: func(u *scripted) { // fan-in, filtered, selective flush
				if u.Cycle()%6 == 3 {
					u.rec('f', uint64(u.In.FlushKeys(key, chronon.YoungerThan(u.Cycle()-3))))
				}
				if u.Cycle()%3 == 0 {
					u.drain(func(v *uint64) bool { return *v%4 != 1 })
				}
			}},
			{tick: func(u *scripted) { // fan-in, slow: a growing backlog
				if u.Cycle()%5 == 0 {
					if v, ok := u.In.TryReceive(); ok {
						u.rec('r', v)
					}
				}
				if u.Cycle() == 70 {
					u.rec('f', uint64(u.In.FlushKeys(key, chronon.OlderThan(30))))
					u.drain(nil)
				}
			}},
		}
		require.NoError(t, s.Add("src", src))
		require.NoError(t, s.Add("other", other))
		for i, d := range dests {
			require.NoError(t, s.Add(fmt.Sprint("d", i), d))
			require.NoError(t, chronon.Connect(&src.Out, &d.In))
			if i >= 4 {
				require.NoError(t, chronon.Connect(&other.Out, &d.In, chronon.Delay(2)))
			}
		}
		require.NoError(t, s.Build())
		return s
	}
}

// TestBroadcastPortContract checks filter, flush and cancel through InPort
// on broadcast destinations against explicit expectations and against the
// direct transport, sequentially and in parallel.
func TestBroadcastPortContract(t *testing.T) {
	on, off := contractModel(), contractModel(chronon.WithBroadcast(false))
	s := on(t)
	require.Equal(t, []string{"src.Out"}, chronon.BroadcastPorts(s))
	require.NoError(t, s.Run(80))
	ev := func(name string, kind byte) []uint64 {
		u, _ := s.Unit(name)
		var vs []uint64
		for _, e := range u.(*scripted).log {
			if e.Kind == kind {
				vs = append(vs, e.V)
			}
		}
		return vs
	}
	// d0 and d1 take everything the cycle it arrives, before the cancel
	// made at 20 reaches them at 21: nothing is cancelled for them.
	var want []uint64
	for c := range uint64(60) {
		want = append(want, c)
	}
	assert.Equal(t, want, ev("d0", 'r'))
	var filtered []uint64
	for _, v := range want {
		if v%3 != 0 {
			filtered = append(filtered, v)
		}
	}
	assert.Equal(t, filtered, ev("d1", 'r'))
	// d2's flush at cycle 9 covers what was sent in 0..8 and keeps keys
	// 3..6.
	r2 := ev("d2", 'r')
	require.GreaterOrEqual(t, len(r2), 4)
	assert.Equal(t, []uint64{3, 4, 5, 6}, r2[:4])
	assert.Equal(t, uint64(5), ev("d2", 'f')[0])
	// d5's backlog of src messages sent before 20 is cancelled from 21 on.
	u5, _ := s.Unit("d5")
	cancelled := false
	for _, e := range u5.(*scripted).log {
		if e.Kind == 'r' && e.Cycle >= 21 && e.V < 1000 {
			assert.GreaterOrEqual(t, e.V, uint64(20), "cycle %d", e.Cycle)
		}
		if e.Kind == 'r' && e.Cycle == 20 && e.V < 20 {
			cancelled = true // it still had older ones queued
		}
	}
	assert.True(t, cancelled, "d5 must have a backlog at the cancel")

	sc := func(build func(t *testing.T) *chronon.Simulation) scenario {
		return scenario{build: build, run: runFor(80)}
	}
	ref := sc(off).outcome(t, 1)
	for _, w := range harnessWorkers {
		for name, b := range map[string]func(t *testing.T) *chronon.Simulation{"on": on, "off": off} {
			got := sc(b).outcome(t, w)
			if d := firstDivergence(ref, got); d != "" {
				t.Fatalf("broadcast %s, %d workers: %s", name, w, d)
			}
		}
	}
}

// TestBroadcastSlowDestination: a destination that never receives makes
// the shared ring overflow in exactly the cycle its lane would, with the
// same connection named, with every engine; a slow but steady one never
// does.
func TestBroadcastSlowDestination(t *testing.T) {
	build := func(lazyFlush bool, sopts ...chronon.SimOption) func(t *testing.T) *chronon.Simulation {
		return func(t *testing.T) *chronon.Simulation {
			t.Helper()
			s := chronon.New(sopts...)
			src := &source{}
			other := &source{}
			require.NoError(t, s.Add("src", src))
			require.NoError(t, s.Add("other", other))
			for i := range 5 {
				var d *scripted
				switch i {
				case 2: // never receives; with lazyFlush flushes a few keys now and then
					d = &scripted{tick: func(u *scripted) {
						if lazyFlush && u.Cycle()%50 == 49 {
							u.rec('f', uint64(u.In.FlushKeys(func(v *uint64) uint64 { return *v % 10 }, chronon.AtOrOlder(0))))
						}
					}}
				case 3: // slow: one message every other cycle, catching up in bursts
					d = &scripted{tick: func(u *scripted) {
						if u.Cycle()%64 == 0 {
							u.drain(nil)
						}
					}}
				default:
					d = &scripted{tick: func(u *scripted) { u.drain(nil) }}
				}
				require.NoError(t, s.Add(fmt.Sprint("d", i), d))
				require.NoError(t, chronon.Connect(&src.Out, &d.In))
				if i >= 2 {
					require.NoError(t, chronon.Connect(&other.Out, &d.In, chronon.Capacity(4)))
				}
			}
			require.NoError(t, s.Build())
			return s
		}
	}
	for _, lazyFlush := range []bool{false, true} {
		off := scenario{build: build(lazyFlush, chronon.WithBroadcast(false)), run: runFor(8000)}
		on := scenario{build: build(lazyFlush), run: runFor(8000)}
		ref := off.outcome(t, 1)
		if !lazyFlush {
			require.Contains(t, ref.err, "src.Out -> d2.In at cycle 4096", "the lazy destination overflows")
			s := on.build(t)
			require.NotEmpty(t, chronon.BroadcastPorts(s))
			err := s.Run(8000)
			var oe *chronon.OverflowError
			require.ErrorAs(t, err, &oe)
			require.ErrorIs(t, err, chronon.ErrOverflow)
			assert.Equal(t, "src.Out -> d2.In", oe.Conn)
			assert.Equal(t, uint64(chronon.UnboundedDepth), oe.Cycle)
		} else {
			// The flushes consume a tenth of the backlog, which is credited
			// like receives: the destination still falls UnboundedDepth
			// messages behind, later. (frontier's flush moves a wrapped run
			// out of the lane, so the physical lane alone would never fill
			// and the backlog would grow without bound.)
			require.Contains(t, ref.err, "src.Out -> d2.In at cycle 4546")
		}
		workers := harnessWorkers
		for _, w := range workers {
			for name, sc := range map[string]scenario{"on": on, "off": off} {
				if d := firstDivergence(ref, sc.outcome(t, w)); d != "" {
					t.Fatalf("flush %v, broadcast %s, %d workers: %s", lazyFlush, name, w, d)
				}
			}
		}
	}
}

// TestDeterminismBroadcastOnOff runs the harness's random topologies (with
// high-fanout delay-1 sources) with the broadcast transport on and off,
// sequentially and at every harness worker count: every event stream must
// equal the sequential direct-transport one.
func TestDeterminismBroadcastOnOff(t *testing.T) {
	seeds := 30
	if raceEnabled {
		seeds = 8
	}
	withBroadcast := 0
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			sd := uint64(seed)*104729 + 11
			off := scenario{build: randomTopology(sd, chronon.WithBroadcast(false)), run: runFor(400)}
			on := scenario{build: randomTopology(sd), run: runFor(400)}
			if len(chronon.BroadcastPorts(on.build(t))) > 0 {
				withBroadcast++
			}
			ref := off.outcome(t, 1)
			if d := firstDivergence(ref, on.outcome(t, 1)); d != "" {
				t.Fatalf("sequential, broadcast on: %s", d)
			}
			for _, w := range harnessWorkers {
				for name, sc := range map[string]scenario{"on": on, "off": off} {
					if d := firstDivergence(ref, sc.outcome(t, w)); d != "" {
						t.Fatalf("broadcast %s, %d workers: %s", name, w, d)
					}
				}
			}
		})
	}
	require.Greater(t, withBroadcast, seeds/2, "most topologies must have a broadcast source")
}

// broadcastStress is a fanout-8 harness hub whose destinations are harness
// nodes, half of them fan-in ports, feeding back into the hub.
func broadcastStress(sopts ...chronon.SimOption) func(t *testing.T) *chronon.Simulation {
	return func(t *testing.T) *chronon.Simulation {
		t.Helper()
		s := chronon.New(sopts...)
		hub := &node{seed: 99, sendP: 256}
		require.NoError(t, s.Add("hub", hub))
		var dests []*node
		for i := range 8 {
			d := &node{seed: uint64(1000 + i), sendP: 64}
			dests = append(dests, d)
			require.NoError(t, s.Add(fmt.Sprint("d", i), d))
			require.NoError(t, chronon.Connect(&hub.Out[0], &d.In, chronon.Rate(2)))
		}
		// Half the destinations are fan-in: hub's second output and a
		// neighbour's output, bounded and delayed, arrive there too.
		for i := 4; i < 8; i++ {
			require.NoError(t, chronon.Connect(&hub.Out[1], &dests[i].In, chronon.Delay(2), chronon.Capacity(4)))
			require.NoError(t, chronon.Connect(&dests[i-4].Out[0], &dests[i].In, chronon.Delay(1)))
		}
		for i := range 4 {
			require.NoError(t, chronon.Connect(&dests[i+4].Out[1], &hub.In, chronon.Delay(3)))
		}
		require.NoError(t, s.Build())
		return s
	}
}

// TestDeterminismBroadcastLong runs a fanout-8 hub long enough to wrap its
// ring several times, on and off, at every worker count.
func TestDeterminismBroadcastLong(t *testing.T) {
	cycles := uint64(12000)
	if raceEnabled {
		cycles = 5000
	}
	off := scenario{build: broadcastStress(chronon.WithBroadcast(false)), run: runFor(cycles)}
	on := scenario{build: broadcastStress(), run: runFor(cycles)}
	require.Equal(t, []string{"hub.Out[0]"}, chronon.BroadcastPorts(on.build(t)))
	ref := off.outcome(t, 1)
	require.Empty(t, ref.err)
	var sent int
	for _, e := range ref.events["hub"] {
		if e.Kind == 's' {
			sent++
		}
	}
	require.Greater(t, sent, 4096, "the shared ring must wrap")
	for _, w := range harnessWorkers {
		for name, sc := range map[string]scenario{"on": on, "off": off} {
			if d := firstDivergence(ref, sc.outcome(t, w)); d != "" {
				t.Fatalf("broadcast %s, %d workers: %s", name, w, d)
			}
		}
	}
}
