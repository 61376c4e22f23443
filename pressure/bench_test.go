package pressure

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Baselines: the two ways of waiting that the Manager replaces, measured in
// the same run as the strategies.

// busySystem is pure busy polling: every empty poll yields (runtime.Gosched)
// and polls again, so every stage uses a core whether or not there is work.
type busySystem struct{ closed atomic.Bool }

type busyWaiter struct{ sys *busySystem }

func (busyWaiter) OnWork() {}
func (busyWaiter) Wake()   {}
func (w busyWaiter) OnEmpty() bool {
	runtime.Gosched()
	return !w.sys.closed.Load()
}

func (s *busySystem) register(string) waiter { return busyWaiter{s} }
func (*busySystem) wake()                    {}
func (s *busySystem) close()                 { s.closed.Store(true) }

// sleepSystem is per-loop backoff polling as the system before pressure did
// it in its balanced mode: spin a little, yield a little, then poll every
// 1 ms with time.Sleep.
type sleepSystem struct{ closed atomic.Bool }

type sleepWaiter struct {
	sys    *sleepSystem
	streak int
}

func (w *sleepWaiter) OnWork() { w.streak = 0 }
func (*sleepWaiter) Wake()     {}
func (w *sleepWaiter) OnEmpty() bool {
	w.streak++
	switch {
	case w.streak <= 64:
	case w.streak <= 128:
		runtime.Gosched()
	default:
		time.Sleep(time.Millisecond)
	}
	return !w.sys.closed.Load()
}

func (s *sleepSystem) register(string) waiter { return &sleepWaiter{sys: s} }
func (*sleepSystem) wake()                    {}
func (s *sleepSystem) close()                 { s.closed.Store(true) }

// policy is one benchmark case: a strategy or a baseline.
type policy struct {
	name string
	new  func() (system, *Manager)
}

func policies() []policy {
	ps := []policy{
		{"busy-gosched", func() (system, *Manager) { return &busySystem{}, nil }},
		{"sleep-1ms", func() (system, *Manager) { return &sleepSystem{}, nil }},
	}
	for _, s := range []WaitStrategy{LowLatency, Balanced, LowCPU} {
		ps = append(ps, policy{s.String(), func() (system, *Manager) {
			m := New(s)
			return managerSystem{m}, m
		}})
	}
	return ps
}

// settle waits until a freshly idle pipeline has reached its idle behaviour:
// every stage parked for the Manager (except LowLatency, which never parks),
// a fixed 5 ms otherwise (longer than the baselines' spin and yield phases).
func settle(b *testing.B, m *Manager) {
	if m == nil || m.Strategy() == LowLatency {
		time.Sleep(5 * time.Millisecond)
		return
	}
	if !waitParked(m, 5*time.Second) {
		b.Fatalf("pipeline did not park: %+v", m.Stats())
	}
}

func idleWindow() time.Duration {
	if v := os.Getenv("PRESSURE_IDLE_WINDOW"); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return 5 * time.Second
}

// BenchmarkIdleCPU: CPU used by a 4-stage pipeline left idle, in percent of
// one core, measured over PRESSURE_IDLE_WINDOW (default 5 s) per iteration
// (so the default -benchtime runs one iteration).
func BenchmarkIdleCPU(b *testing.B) {
	for _, pol := range policies() {
		b.Run(pol.name, func(b *testing.B) {
			sys, m := pol.new()
			p := startPipeline(sys, pipelineConfig{stages: 4, capacity: 1024})
			defer p.stop()
			for i := range 1000 {
				for !p.publish(uint64(i)) {
					runtime.Gosched()
				}
			}
			if !p.waitSink(1000, 5*time.Second) {
				b.Fatal("pipeline did not deliver")
			}
			settle(b, m)
			window := idleWindow()
			b.ResetTimer()
			var used, wall time.Duration
			for range b.N {
				c0, t0 := cpuTime(), time.Now()
				time.Sleep(window)
				used += cpuTime() - c0
				wall += time.Since(t0)
			}
			b.StopTimer()
			b.ReportMetric(100*float64(used)/float64(wall), "%core")
		})
	}
}

// BenchmarkWakeLatency: time from the entry point starting to publish one
// item into an idle 4-stage pipeline until the first stage holds it. Each
// iteration is one sample, and includes letting the pipeline go idle again
// (so ns/op is not the latency; the p50-us and p99-us metrics are).
func BenchmarkWakeLatency(b *testing.B) {
	for _, pol := range policies() {
		b.Run(pol.name, func(b *testing.B) {
			sys, m := pol.new()
			p := startPipeline(sys, pipelineConfig{stages: 4, capacity: 1024})
			defer p.stop()
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				settle(b, m)
				p.held.Store(0)
				t0 := nanotime()
				if !p.publish(uint64(i)) {
					b.Fatal("input ring full")
				}
				for p.held.Load() == 0 {
					runtime.Gosched()
				}
				samples = append(samples, time.Duration(p.held.Load()-t0))
				if !p.waitSink(uint64(i+1), 5*time.Second) {
					b.Fatal("pipeline did not deliver")
				}
			}
			b.StopTimer()
			b.ReportMetric(quantile(samples, 0.50), "p50-us")
			b.ReportMetric(quantile(samples, 0.99), "p99-us")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkThroughput: sustained throughput of a pipeline whose first stage
// generates items as fast as the second takes them, in items/s through the
// last stage. 4 stages on 2 and 1 Ps share the Ps; 2 stages on 2 Ps have a
// core each.
func BenchmarkThroughput(b *testing.B) {
	for _, c := range []struct{ stages, procs int }{{2, 2}, {4, 2}, {4, 1}} {
		for _, pol := range policies() {
			b.Run(fmt.Sprintf("stages=%d/procs=%d/%s", c.stages, c.procs, pol.name), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.procs))
				sys, m := pol.new()
				p := startPipeline(sys, pipelineConfig{stages: c.stages, capacity: 1024, generate: true, target: uint64(b.N)})
				var st0 Stats
				if m != nil {
					st0 = m.Stats()
				}
				b.ResetTimer()
				<-p.reach
				b.StopTimer()
				el := b.Elapsed()
				p.stop()
				b.ReportMetric(float64(b.N)/el.Seconds(), "items/s")
				if m != nil {
					st := m.Stats()
					b.ReportMetric(float64(st.Parks-st0.Parks)/float64(b.N)*1e6, "parks/Mitem")
					b.ReportMetric(float64(st.Yields-st0.Yields)/float64(b.N)*1e6, "yields/Mitem")
				}
			})
		}
	}
}

// BenchmarkHotPath: the cost of one loop iteration's calls under sustained
// load (OnWork, Wake, then the OnEmpty of a short gap), run by 1 and by 2
// goroutines at once, each its own stage on its own OS thread. The metric
// cpu-ns/op is the CPU time of those threads per iteration: unlike wall
// time it does not depend on how the (shared, noisy) machine schedules
// them, and it grows when they write the same cache lines, as it does for
// the two baselines: a shared counter (one line written by all) and
// adjacent per-goroutine counters (false sharing).
func BenchmarkHotPath(b *testing.B) {
	cases := []struct {
		name string
		body func() func(n int) // per goroutine: returns its loop
	}{
		{"manager", func() func(int) {
			m := New(Balanced)
			return func(n int) {
				st, err := m.Register("bench")
				if err != nil {
					panic(err)
				}
				// Measure the free-spin path of OnEmpty also when
				// GOMAXPROCS is 1, where a real stage would yield.
				m.procs.Store(4)
				for range n {
					st.OnWork()
					m.Wake()
					st.OnEmpty()
				}
			}
		}},
		{"manager-without-OnEmpty", func() func(int) {
			m := New(Balanced)
			return func(n int) {
				st, err := m.Register("bench")
				if err != nil {
					panic(err)
				}
				for range n {
					st.OnWork()
					m.Wake()
				}
			}
		}},
		{"shared-counter", func() func(int) {
			var shared atomic.Uint64
			return func(n int) {
				for range n {
					shared.Add(1)
				}
			}
		}},
		{"adjacent-counters", func() func(int) {
			var counters [2]atomic.Uint64
			var next atomic.Int32
			return func(n int) {
				c := &counters[next.Add(1)%2]
				for range n {
					c.Add(1)
				}
			}
		}},
	}
	for _, c := range cases {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", c.name, workers), func(b *testing.B) {
				loop := c.body()
				var cpu atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						t0 := threadCPU()
						loop(b.N)
						cpu.Add(int64(threadCPU() - t0))
					}()
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(cpu.Load())/float64(b.N*workers), "cpu-ns/op")
			})
		}
	}
}

// threadCPU is the CPU time used by the calling OS thread.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// quantile returns the q-quantile of samples in microseconds; it sorts them.
func quantile(samples []time.Duration, q float64) float64 {
	if len(samples) == 0 {
		return 0
	}
	slices.Sort(samples)
	return float64(samples[min(len(samples)-1, int(q*float64(len(samples))))]) / 1e3
}

// runBursts publishes bursts of 64 items into a 4-stage pipeline on sys,
// with an idle gap after each, b.N bursts in all, and reports the CPU used
// (percent of one core, over the whole run), the first-item latency of the
// bursts and the parks per burst.
func runBursts(b *testing.B, sys system, m *Manager, gap time.Duration) {
	const burst = 64
	p := startPipeline(sys, pipelineConfig{stages: 4, capacity: 1024})
	defer p.stop()
	samples := make([]time.Duration, 0, b.N)
	var sent, parks0 uint64
	if m != nil {
		parks0 = m.Stats().Parks
	}
	c0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		p.held.Store(0)
		t0 := nanotime()
		for range burst {
			for !p.publish(sent) {
				runtime.Gosched()
			}
			sent++
		}
		time.Sleep(gap)
		if h := p.held.Load(); h != 0 {
			samples = append(samples, time.Duration(h-t0))
		}
		if !p.waitSink(sent, 5*time.Second) {
			b.Fatal("pipeline did not deliver")
		}
	}
	b.StopTimer()
	b.ReportMetric(100*float64(cpuTime()-c0)/float64(b.Elapsed()), "%core")
	b.ReportMetric(quantile(samples, 0.50), "p50-us")
	if m != nil {
		b.ReportMetric(float64(m.Stats().Parks-parks0)/float64(b.N), "parks/burst")
	}
}

var gaps = []time.Duration{50 * time.Microsecond, 500 * time.Microsecond, 5 * time.Millisecond}

// BenchmarkBursts: bursts of 64 items separated by idle gaps, the load
// between sustained and idle. An iteration is one burst and its gap.
func BenchmarkBursts(b *testing.B) {
	for _, gap := range gaps {
		for _, pol := range policies() {
			b.Run(fmt.Sprintf("gap=%v/%s", gap, pol.name), func(b *testing.B) {
				sys, m := pol.new()
				runBursts(b, sys, m, gap)
			})
		}
	}
}

// BenchmarkThresholds is the measurement that chose the thresholds of
// Balanced and LowCPU (see docs/pressure.md): bursts as in BenchmarkBursts,
// for a grid of candidate park delays. It is skipped unless
// PRESSURE_THRESHOLDS=1.
func BenchmarkThresholds(b *testing.B) {
	if os.Getenv("PRESSURE_THRESHOLDS") != "1" {
		b.Skip("set PRESSURE_THRESHOLDS=1")
	}
	for _, gap := range gaps {
		for _, c := range []struct{ highToLow, lowToIdle time.Duration }{
			{10 * time.Microsecond, 40 * time.Microsecond},
			{20 * time.Microsecond, 100 * time.Microsecond},
			{50 * time.Microsecond, 250 * time.Microsecond},
			{100 * time.Microsecond, 500 * time.Microsecond},
			{200 * time.Microsecond, 1 * time.Millisecond},
			{200 * time.Microsecond, 2 * time.Millisecond},
			{1 * time.Millisecond, 10 * time.Millisecond},
		} {
			b.Run(fmt.Sprintf("gap=%v/park-after=%v", gap, c.highToLow+c.lowToIdle), func(b *testing.B) {
				m := New(Balanced)
				m.p.highToLow, m.p.lowToIdle = c.highToLow, c.lowToIdle
				runBursts(b, managerSystem{m}, m, gap)
			})
		}
	}
}
