package chronon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

func upTo(from uint64, n int) func(uint64) int {
	return func(c uint64) int {
		if c < from {
			return 0
		}
		return n
	}
}

// TestPortSemantics runs each case twice, with the consumer added before and
// after the producer: admission never depends on tick order.
func TestPortSemantics(t *testing.T) {
	three := func(c uint64) []int {
		if c < 2 {
			return []int{10 * int(c), 10*int(c) + 1, 10*int(c) + 2}
		}
		return nil
	}
	for _, tc := range []struct {
		name   string
		opts   []chronon.Option
		plan   func(uint64) []int
		take   func(uint64) int
		cycles uint64
		want   []got
		sent   []int // nil: not checked
	}{
		{name: "delay 1", plan: every(3), cycles: 5, want: []got{{1, 0}, {2, 1}, {3, 2}}},
		{name: "delay 3", opts: []chronon.Option{chronon.Delay(3)}, plan: every(3), cycles: 8, want: []got{{3, 0}, {4, 1}, {5, 2}}},
		{name: "delay 0 same cycle", opts: []chronon.Option{chronon.Delay(0)}, plan: every(3), cycles: 5, want: []got{{0, 0}, {1, 1}, {2, 2}}},
		{name: "rate 1 by default", plan: three, cycles: 4, want: []got{{1, 0}, {2, 10}}, sent: []int{0, 10}},
		{name: "rate 2", opts: []chronon.Option{chronon.Rate(2)}, plan: three, cycles: 4, want: []got{{1, 0}, {1, 1}, {2, 10}, {2, 11}}},
		{name: "rate unlimited", opts: []chronon.Option{chronon.Rate(chronon.Unlimited)}, plan: three, cycles: 4,
			want: []got{{1, 0}, {1, 1}, {1, 2}, {2, 10}, {2, 11}, {2, 12}}},
		{name: "capacity back pressure, credit next cycle", opts: []chronon.Option{chronon.Capacity(2), chronon.Rate(chronon.Unlimited)},
			plan: every(8), take: upTo(4, 1), cycles: 9,
			want: []got{{4, 0}, {5, 1}, {6, 5}, {7, 6}, {8, 7}}, sent: []int{0, 1, 5, 6, 7}},
		{name: "capacity 1 rate 2 passes every other cycle", opts: []chronon.Option{chronon.Capacity(1), chronon.Rate(2)},
			plan: every(4), cycles: 5, want: []got{{1, 0}, {3, 2}}, sent: []int{0, 2}},
		{name: "flip-flop passes every cycle", opts: []chronon.Option{chronon.Capacity(1)},
			plan: every(4), cycles: 5, want: []got{{1, 0}, {2, 1}, {3, 2}, {4, 3}}},
		{name: "flip-flop holds two when stalled", opts: []chronon.Option{chronon.Capacity(1)},
			plan: every(6), take: upTo(3, 1), cycles: 7,
			want: []got{{3, 0}, {4, 1}, {5, 4}, {6, 5}}, sent: []int{0, 1, 4, 5}},
		{name: "delay 2 capacity 3 streams", opts: []chronon.Option{chronon.Delay(2), chronon.Capacity(3)},
			plan: every(5), cycles: 8, want: []got{{2, 0}, {3, 1}, {4, 2}, {5, 3}, {6, 4}}},
	} {
		for _, consFirst := range []bool{false, true} {
			p := &prod{plan: tc.plan}
			k := &cons{take: tc.take}
			s := pair(t, consFirst, p, k, tc.opts...)
			require.NoError(t, s.Run(tc.cycles))
			assert.Equal(t, tc.want, k.got, "%s (consumer first: %v)", tc.name, consFirst)
			if tc.sent != nil {
				var sent []int
				for _, g := range p.sent {
					sent = append(sent, g.V)
				}
				assert.Equal(t, tc.sent, sent, "%s sent (consumer first: %v)", tc.name, consFirst)
			}
		}
	}
}

func TestFanoutAllOrNone(t *testing.T) {
	s := chronon.New()
	p := &prod{plan: every(6)}
	a := &cons{take: upTo(100, 1)} // stalled
	b := &cons{}
	require.NoError(t, s.Add("p", p))
	require.NoError(t, s.Add("a", a))
	require.NoError(t, s.Add("b", b))
	require.NoError(t, chronon.Connect(&p.Out, &a.In, chronon.Capacity(2)))
	require.NoError(t, chronon.Connect(&p.Out, &b.In))
	require.NoError(t, s.Build())
	require.NoError(t, s.Run(8))
	assert.Equal(t, []got{{1, 0}, {2, 1}}, b.got, "b receives only what a could also accept")
	assert.Len(t, p.fail, 4)
	assert.Empty(t, a.got)
}

func TestCanSendIsAPreflight(t *testing.T) {
	var can []bool
	p := &prod{}
	p.plan = func(c uint64) []int {
		can = append(can, p.Out.CanSend(), p.Out.CanSend())
		if c < 3 {
			return []int{int(c)}
		}
		return nil
	}
	k := &cons{take: upTo(100, 1)}
	s := pair(t, false, p, k, chronon.Capacity(2))
	require.NoError(t, s.Run(4))
	assert.Equal(t, []bool{true, true, true, true, false, false, false, false}, can)
}

func TestReceiveFiltered(t *testing.T) {
	// Odd values are rejected and consumed; their capacity is freed.
	p := &prod{plan: every(8)}
	k := &cons{take: upTo(0, 1), keep: func(v *int) bool { return *v%2 == 0 }}
	s := pair(t, false, p, k, chronon.Capacity(2), chronon.Rate(chronon.Unlimited))
	require.NoError(t, s.Run(10))
	// Cycle 2 rejects 1 and finds nothing else ready; 2 arrives at 3.
	assert.Equal(t, []got{{1, 0}, {3, 2}, {5, 4}, {7, 6}}, k.got)
	assert.Empty(t, p.fail, "rejected messages free capacity")
}

func TestFlushRanges(t *testing.T) {
	// Values 1..6 are sent in cycles 0..5 over a delay-4 edge; the receiver
	// flushes by value in cycle 5, when 1 is ready, 2..5 are in flight and 6
	// is sent this cycle (and so not covered by the flush).
	for _, tc := range []struct {
		r    chronon.Range
		want []int
	}{
		{chronon.YoungerThan(3), []int{1, 2, 3, 6}},
		{chronon.AtOrYounger(3), []int{1, 2, 6}},
		{chronon.OlderThan(3), []int{3, 4, 5, 6}},
		{chronon.AtOrOlder(3), []int{4, 5, 6}},
		{chronon.Outside(2, 4), []int{2, 3, 4, 6}},
		{chronon.Range{}, []int{1, 2, 3, 4, 5, 6}},
	} {
		for _, consFirst := range []bool{false, true} {
			p := &prod{plan: func(c uint64) []int {
				if c < 6 {
					return []int{int(c) + 1}
				}
				return nil
			}}
			var flushed int
			k := &cons{take: upTo(6, 1<<10), before: func(k *cons) {
				if k.Cycle() == 5 {
					flushed = k.In.FlushKeys(func(v *int) uint64 { return uint64(*v) }, tc.r)
				}
			}}
			s := pair(t, consFirst, p, k, chronon.Delay(4), chronon.Capacity(8))
			require.NoError(t, s.Run(12))
			var vals []int
			for _, g := range k.got {
				vals = append(vals, g.V)
			}
			assert.Equal(t, tc.want, vals, "%v (consumer first: %v)", tc.r, consFirst)
			assert.Equal(t, 6-len(tc.want), flushed, "%v", tc.r)
		}
	}
}

func TestFlushAll(t *testing.T) {
	p := &prod{plan: every(10)}
	k := &cons{take: upTo(100, 1), before: func(k *cons) {
		if k.Cycle() == 5 {
			assert.Equal(t, 5, k.In.Flush(), "sent in cycles 0..4, over a delay-3 edge")
		}
	}}
	s := pair(t, false, p, k, chronon.Delay(3), chronon.Capacity(5), chronon.Rate(chronon.Unlimited))
	require.NoError(t, s.Run(6))
	assert.Equal(t, []got{{5, 5}}, p.fail, "the flush in cycle 5 frees capacity from cycle 6 on")
	k.take = upTo(0, 1<<10)
	require.NoError(t, s.Run(10))
	require.NotEmpty(t, k.got)
	assert.Equal(t, got{9, 6}, k.got[0])
}

func TestCancelInFlight(t *testing.T) {
	// Delay 2; the producer cancels in cycle 2 after sending 2. The cancel
	// reaches the receiver in cycle 4: 1 (arrive 3) is taken, 2 (arrive 4)
	// is discarded, 3 (sent after the cancel) arrives.
	for _, consFirst := range []bool{false, true} {
		p := &prod{}
		p.plan = func(c uint64) []int {
			if c == 2 {
				p.Out.Send(2)
				p.Out.CancelInFlight()
				return nil
			}
			if c < 5 {
				return []int{int(c)}
			}
			return nil
		}
		k := &cons{}
		s := pair(t, consFirst, p, k, chronon.Delay(2))
		require.NoError(t, s.Run(8))
		assert.Equal(t, []got{{2, 0}, {3, 1}, {5, 3}, {6, 4}}, k.got, "consumer first: %v", consFirst)
	}
	// A stalled receiver loses everything it had not taken by cycle 4.
	p := &prod{}
	p.plan = func(c uint64) []int {
		if c == 2 {
			p.Out.CancelInFlight()
		}
		if c < 5 {
			return []int{int(c)}
		}
		return nil
	}
	k := &cons{take: upTo(4, 10)}
	s := pair(t, false, p, k, chronon.Delay(2))
	require.NoError(t, s.Run(8))
	assert.Equal(t, []got{{4, 2}, {5, 3}, {6, 4}}, k.got)
}

func TestCancelManyEpochs(t *testing.T) {
	// Cancels every cycle on a long edge: every message is cancelled
	// before it arrives.
	p := &prod{}
	p.plan = func(c uint64) []int {
		if c < 40 {
			p.Out.Send(int(c))
			p.Out.CancelInFlight()
		}
		return nil
	}
	k := &cons{}
	s := pair(t, false, p, k, chronon.Delay(30))
	require.NoError(t, s.Run(80))
	assert.Empty(t, k.got, "every message is cancelled by the time it arrives")
}

func TestCancelBurstsDoNotDependOnTickOrder(t *testing.T) {
	// Regression (issue 16, hole 1): one message sent in cycle 0 (arrive 3),
	// then 10 cancels in cycle 5 and 10 in cycle 6, into a consumer taking
	// what is ready in cycle 6 on a delay-3 capacity-4 edge. The cancels of
	// cycle 5 reach the consumer in cycle 8, so it gets the message in 6
	// whichever unit ticks first, and on any worker count. It used to read
	// the sender's live epoch: 20 cancels passed a 16-entry history when the
	// producer ticked first.
	build := func(consFirst bool) (*chronon.Simulation, *cons) {
		p := &prod{}
		p.plan = func(c uint64) []int {
			switch c {
			case 0:
				return []int{7}
			case 5, 6:
				for range 10 {
					p.Out.CancelInFlight()
				}
			}
			return nil
		}
		k := &cons{take: func(c uint64) int {
			if c == 6 {
				return 4
			}
			return 0
		}}
		return pair(t, consFirst, p, k, chronon.Delay(3), chronon.Capacity(4)), k
	}
	for _, consFirst := range []bool{false, true} {
		for _, w := range []int{1, 2} {
			for range 20 {
				s, k := build(consFirst)
				s.SetParallelThreshold(0)
				require.NoError(t, s.SetWorkers(w))
				require.NoError(t, s.Run(10))
				require.Equal(t, []got{{6, 7}}, k.got, "consumer first %v, %d workers", consFirst, w)
			}
		}
	}
}

func TestCancelBurstOnLongEdge(t *testing.T) {
	// Many cancels per cycle on a delay-12 edge: a message is cancelled
	// exactly when the first cancel after it is 12 cycles old, however many
	// cancels came since.
	p := &prod{}
	p.plan = func(c uint64) []int {
		if c < 30 {
			p.Out.Send(int(c))
		}
		if c%5 == 4 && c < 30 {
			for range 40 {
				p.Out.CancelInFlight()
			}
		}
		return nil
	}
	k := &cons{take: func(c uint64) int {
		if c%7 == 0 {
			return 100
		}
		return 0
	}}
	s := pair(t, false, p, k, chronon.Delay(12))
	require.NoError(t, s.Run(60))
	// Cancels at 4, 9, ..., 29 (each after that cycle's send) reach the
	// consumer at 16, 21, ..., 41; it takes what is ready every 7 cycles:
	// at 14 sends 0-2 (the cancel of 4 is not there yet), at 21 sends 3-9
	// (all cancelled), at 28 sends 10-16 (up to 14 cancelled, by the cancel
	// of 14 at 26), at 35 sends 17-23 (up to 19 cancelled), at 42 24-29
	// (all cancelled).
	want := []got{{14, 0}, {14, 1}, {14, 2}, {28, 15}, {28, 16}, {35, 20}, {35, 21}, {35, 22}, {35, 23}}
	require.Equal(t, want, k.got)
}

// fixedProd sends its cycle on a NoCancelOutPort.
type fixedProd struct {
	chronon.Base
	Out chronon.NoCancelOutPort[int] `chronon:"out"`
}

func (p *fixedProd) Tick() {
	if !p.Out.CanSend() || !p.Out.Send(int(p.Cycle())) {
		panic("refused")
	}
}

func TestNoCancelOutPort(t *testing.T) {
	s := chronon.New()
	p, k := &fixedProd{}, &cons{}
	require.NoError(t, s.Add("p", p))
	require.NoError(t, s.Add("k", k))
	require.NoError(t, chronon.Connect(&p.Out, &k.In, chronon.Delay(2), chronon.Capacity(3)))
	require.NoError(t, s.Build())
	require.Equal(t, "p.out", p.Out.Name())
	require.NoError(t, s.Run(5))
	require.Equal(t, []got{{2, 0}, {3, 1}, {4, 2}}, k.got)
	allocs := testing.AllocsPerRun(100, func() { _ = s.Run(1) })
	require.Zero(t, allocs)
}

func TestUnconnectedPorts(t *testing.T) {
	p := &prod{plan: every(3)}
	k := &cons{}
	s := chronon.New()
	require.NoError(t, s.Add("p", p))
	require.NoError(t, s.Add("k", k))
	require.NoError(t, s.Build())
	require.NoError(t, s.Run(4))
	assert.Len(t, p.sent, 3, "an open output discards")
	assert.Empty(t, k.got)
	assert.Equal(t, "p.Out", p.Out.Name())
}
