package chronon_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// source sends its cycle number every cycle.
type source struct {
	chronon.Base
	Out chronon.OutPort[uint64]
}

func (s *source) Tick() { s.Out.Send(s.Cycle()) }

// sink receives everything ready.
type sink struct {
	chronon.Base
	In  chronon.InPort[uint64]
	sum uint64
}

func (s *sink) Tick() {
	for {
		v, ok := s.In.TryReceive()
		if !ok {
			return
		}
		s.sum += v
	}
}

// minimal is the producer -> consumer model over a delay-1 edge.
func minimal(tb testing.TB, opts ...chronon.Option) (*chronon.Simulation, *sink) {
	s := chronon.New()
	src, dst := &source{}, &sink{}
	require.NoError(tb, s.Add("producer", src))
	require.NoError(tb, s.Add("consumer", dst))
	require.NoError(tb, chronon.Connect(&src.Out, &dst.In, opts...))
	require.NoError(tb, s.Build())
	return s, dst
}

// fanin is four producers into one consumer.
func fanin(tb testing.TB, opts ...chronon.Option) *chronon.Simulation {
	s := chronon.New()
	dst := &sink{}
	require.NoError(tb, s.Add("consumer", dst))
	for i := range 4 {
		src := &source{}
		require.NoError(tb, s.Add("p"+strconv.Itoa(i), src))
		require.NoError(tb, chronon.Connect(&src.Out, &dst.In, append([]chronon.Option{chronon.Delay(i + 1)}, opts...)...))
	}
	require.NoError(tb, s.Build())
	return s
}

func TestZeroAllocsPerCycle(t *testing.T) {
	for name, s := range map[string]*chronon.Simulation{
		"minimal":            func() *chronon.Simulation { s, _ := minimal(t); return s }(),
		"flip-flop":          func() *chronon.Simulation { s, _ := minimal(t, chronon.Capacity(1)); return s }(),
		"fan-in":             fanin(t),
		"fan-in bounded":     fanin(t, chronon.Capacity(2)),
		"minimal with flush": flushing(t),
		"broadcast":          broadcastFanout(t, 8, true, false),
		"broadcast fan-in":   broadcastFanout(t, 8, true, true),
		"broadcast flushing": broadcastFlushing(t),
	} {
		require.NoError(t, s.Run(1000), name)
		allocs := testing.AllocsPerRun(20, func() { _ = s.Run(1000) })
		assert.Zero(t, allocs, "%s: allocations per 1000 cycles", name)
	}
}

// flusher flushes its input by key every 7th cycle and receives otherwise.
type flusher struct {
	chronon.Base
	In  chronon.InPort[uint64]
	key func(*uint64) uint64
}

func (f *flusher) Tick() {
	if f.Cycle()%7 == 0 {
		f.In.FlushKeys(f.key, chronon.YoungerThan(f.Cycle()-2))
		return
	}
	f.In.TryReceive()
}

func flushing(tb testing.TB) *chronon.Simulation {
	s := chronon.New()
	src, dst := &source{}, &flusher{key: func(v *uint64) uint64 { return *v }}
	require.NoError(tb, s.Add("producer", src))
	require.NoError(tb, s.Add("consumer", dst))
	require.NoError(tb, chronon.Connect(&src.Out, &dst.In, chronon.Delay(3), chronon.Capacity(8)))
	require.NoError(tb, s.Build())
	return s
}

// BenchmarkMinimal reports simulated cycles per second of producer ->
// consumer over a delay-1 edge (one message per cycle).
func BenchmarkMinimal(b *testing.B) {
	s, _ := minimal(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	if err := s.Run(uint64(b.N)); err != nil {
		b.Fatal(err)
	}
	reportRate(b, cpu0)
}

// burst sends 16 messages per cycle.
type burst struct {
	chronon.Base
	Out chronon.OutPort[uint64]
}

func (s *burst) Tick() {
	for i := range uint64(16) {
		s.Out.Send(i)
	}
}

// BenchmarkSendReceive reports the cost of one message, Send plus
// TryReceive, with 16 messages per cycle amortizing the engine.
func BenchmarkSendReceive(b *testing.B) {
	s := chronon.New()
	src, dst := &burst{}, &sink{}
	require.NoError(b, s.Add("producer", src))
	require.NoError(b, s.Add("consumer", dst))
	require.NoError(b, chronon.Connect(&src.Out, &dst.In, chronon.Capacity(32), chronon.Rate(chronon.Unlimited)))
	require.NoError(b, s.Build())
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	if err := s.Run(uint64(b.N)); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(16*b.N), "ns/msg")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(16*b.N), "cpu-ns/msg")
}

func BenchmarkFanIn4(b *testing.B) {
	s := fanin(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	if err := s.Run(uint64(b.N)); err != nil {
		b.Fatal(err)
	}
	reportRate(b, cpu0)
}

// broadcastFanout is one source sending every cycle over n delay-1
// unbounded edges to sinks, with the shared broadcast transport on or off.
// With fanin, half the sinks also read a second, plain producer (capacity
// 4, delay 2).
func broadcastFanout(tb testing.TB, n int, on, fanin bool) *chronon.Simulation {
	s := chronon.New(chronon.WithBroadcast(on))
	src, other := &source{}, &source{}
	require.NoError(tb, s.Add("src", src))
	require.NoError(tb, s.Add("other", other))
	for i := range n {
		k := &sink{}
		require.NoError(tb, s.Add("k"+strconv.Itoa(i), k))
		require.NoError(tb, chronon.Connect(&src.Out, &k.In))
		if fanin && i >= n/2 {
			require.NoError(tb, chronon.Connect(&other.Out, &k.In, chronon.Delay(2), chronon.Capacity(4)))
		}
	}
	require.NoError(tb, s.Build())
	return s
}

// broadcastFlushing is a broadcast source into flushing destinations, one
// single-connection and one fan-in.
func broadcastFlushing(tb testing.TB) *chronon.Simulation {
	s := chronon.New()
	src, other := &source{}, &source{}
	require.NoError(tb, s.Add("src", src))
	require.NoError(tb, s.Add("other", other))
	key := func(v *uint64) uint64 { return *v }
	for i := range 4 {
		f := &flusher{key: key}
		require.NoError(tb, s.Add("f"+strconv.Itoa(i), f))
		require.NoError(tb, chronon.Connect(&src.Out, &f.In))
		if i%2 == 1 {
			require.NoError(tb, chronon.Connect(&other.Out, &f.In, chronon.Capacity(4)))
		}
	}
	require.NoError(tb, s.Build())
	return s
}

// BenchmarkBroadcast8 is a source with fanout 8 over delay-1 edges, every
// destination taking every message, with the shared broadcast transport on
// and off: ns/cycle and the payload storage of the model's lanes and rings.
// single: 8 single-connection sinks; fanin: 4 of them also read a second
// producer.
func BenchmarkBroadcast8(b *testing.B) {
	for _, fanin := range []bool{false, true} {
		for _, on := range []bool{true, false} {
			name := map[bool]string{false: "single", true: "fanin"}[fanin] + "/" + map[bool]string{false: "off", true: "on"}[on]
			b.Run(name, func(b *testing.B) {
				s := broadcastFanout(b, 8, on, fanin)
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				if err := s.Run(uint64(b.N)); err != nil {
					b.Fatal(err)
				}
				reportRate(b, cpu0)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/cycle")
				b.ReportMetric(float64(chronon.PayloadBytes(s)), "payload-B")
			})
		}
	}
}
