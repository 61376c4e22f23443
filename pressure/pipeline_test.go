package pressure

import (
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// waiter is what a stage loop needs from a wait policy: the Stage of this
// package, or one of the baselines in bench_test.go.
type waiter interface {
	OnWork()
	OnEmpty() bool
	Wake() // work for this stage was published by another goroutine
}

// system is a wait policy for a whole pipeline.
type system interface {
	register(name string) waiter
	wake()
	close()
}

type managerSystem struct{ m *Manager }

func (s managerSystem) register(name string) waiter {
	st, err := s.m.Register(name)
	if err != nil {
		panic(err) // test helper: registration before Close cannot fail
	}
	return st
}
func (s managerSystem) wake()  { s.m.Wake() }
func (s managerSystem) close() { s.m.Close() }

// pipeline is a chain of stages connected by rings: in -> stage 0 -> ring ->
// stage 1 -> ... -> stage n-1, which counts what it receives. With generate
// set, stage 0 makes its own items instead of reading in, as fast as its
// output ring takes them.
type pipeline struct {
	sys    system
	in     *ring
	stages []waiter
	sink   atomic.Uint64
	held   atomic.Int64 // nanotime at which stage 0 first took items since held was zeroed
	target uint64       // sink value at which reached is closed
	reach  chan struct{}
	wg     sync.WaitGroup
}

type pipelineConfig struct {
	stages   int
	capacity int
	generate bool
	target   uint64 // close reached when the sink has this many items (0: never)
}

func startPipeline(sys system, cfg pipelineConfig) *pipeline {
	p := &pipeline{sys: sys, in: newRing(cfg.capacity), target: cfg.target, reach: make(chan struct{})}
	rings := make([]*ring, cfg.stages+1)
	rings[0] = p.in
	for i := 1; i < cfg.stages; i++ {
		rings[i] = newRing(cfg.capacity)
	}
	p.stages = make([]waiter, cfg.stages)
	for i := range p.stages {
		p.stages[i] = sys.register("stage")
	}
	for i, w := range p.stages {
		in, out := rings[i], rings[i+1]
		p.wg.Add(1)
		if i == 0 && cfg.generate {
			go p.generator(w, out)
		} else {
			go p.stage(w, i, in, out)
		}
	}
	return p
}

// mix is the per-item work of a stage: a few nanoseconds of arithmetic.
func mix(v uint64) uint64 {
	for range 4 {
		v ^= v >> 29
		v *= 0x9e3779b97f4a7c15
	}
	return v
}

func (p *pipeline) generator(w waiter, out *ring) {
	defer p.wg.Done()
	var buf [64]uint64
	var next uint64
	for {
		for i := range buf {
			buf[i] = mix(next + uint64(i))
		}
		if k := out.pushN(buf[:]); k > 0 {
			next += uint64(k)
			w.OnWork()
			p.stages[1].Wake()
		} else if !w.OnEmpty() {
			return
		}
	}
}

func (p *pipeline) stage(w waiter, idx int, in, out *ring) {
	defer p.wg.Done()
	var buf [64]uint64
	for {
		n := in.popN(buf[:])
		if n == 0 {
			if !w.OnEmpty() {
				return
			}
			continue
		}
		if idx == 0 && p.held.Load() == 0 {
			p.held.Store(nanotime())
		}
		w.OnWork()
		if idx > 0 {
			p.stages[idx-1].Wake() // room in the input is work for the stage upstream
		}
		for i := range n {
			buf[i] = mix(buf[i])
		}
		if out == nil {
			if v := p.sink.Add(uint64(n)); p.target != 0 && v >= p.target && v-uint64(n) < p.target {
				close(p.reach)
			}
			continue
		}
		for off := 0; off < n; {
			k := out.pushN(buf[off:n])
			off += k
			if k > 0 {
				p.stages[idx+1].Wake()
			} else if !w.OnEmpty() {
				return
			}
		}
	}
}

// publish is the entry point: wake the pipeline, publish one item, wake the
// stage that takes it.
func (p *pipeline) publish(v uint64) bool {
	p.sys.wake()
	ok := p.in.push(v)
	p.stages[0].Wake()
	return ok
}

func (p *pipeline) stop() {
	p.sys.close()
	p.wg.Wait()
}

// cpuTime is the CPU time (user+system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitParked waits until every stage of m is parked, or the deadline passes.
func waitParked(m *Manager, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		st := m.Stats()
		if st.Level == Idle && st.Parks-st.Unparks == uint64(st.Stages) {
			return true
		}
		time.Sleep(100 * time.Microsecond)
	}
	return false
}

// waitSink waits until the pipeline's last stage has received n items.
func (p *pipeline) waitSink(n uint64, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for p.sink.Load() < n {
		if time.Now().After(deadline) {
			return false
		}
		runtime.Gosched()
	}
	return true
}
