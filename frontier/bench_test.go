package frontier

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchMerger returns a merger of n lanes with 8 slots each, and the four
// active lanes of the reference measurements: 1, n/3, 2n/3 and n-1.
func benchMerger(b *testing.B, n int) (*Merger[uint64], [4]*Lane[uint64]) {
	m := New[uint64]()
	ls := make([]*Lane[uint64], n)
	for i := range ls {
		l, err := m.AddLane(uint64(i), 8)
		if err != nil {
			b.Fatal(err)
		}
		ls[i] = l
	}
	return m, [4]*Lane[uint64]{ls[1], ls[n/3], ls[2*n/3], ls[n-1]}
}

func BenchmarkFrontier(b *testing.B) {
	for _, n := range []int{16, 64, 256} {
		b.Run(fmt.Sprintf("lanes=%d/sparse", n), func(b *testing.B) {
			m, act := benchMerger(b, n)
			b.ReportAllocs()
			defer reportCPU(b, cpuNanos())
			for i := 0; b.Loop(); i++ {
				c := uint64(i)
				act[i&3].TryPush(c, c)
				if _, _, ok := m.TryPop(c); !ok {
					b.Fatal("empty")
				}
			}
		})
		b.Run(fmt.Sprintf("lanes=%d/merge4", n), func(b *testing.B) {
			m, act := benchMerger(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			defer reportCPU(b, cpuNanos())
			// One op is one message: four pushes, then four pops.
			for i := 0; i < b.N; i += 4 {
				c := uint64(i)
				for k, l := range act {
					l.TryPush(c+uint64(k&1), c)
				}
				for range 4 {
					if _, _, ok := m.TryPop(c + 1); !ok {
						b.Fatal("empty")
					}
				}
			}
		})
		b.Run(fmt.Sprintf("lanes=%d/emptymin", n), func(b *testing.B) {
			m, _ := benchMerger(b, n)
			b.ReportAllocs()
			defer reportCPU(b, cpuNanos())
			for b.Loop() {
				if _, ok := m.MinArrivalCycle(); ok {
					b.Fatal("not empty")
				}
			}
		})
	}
}

// reportCPU reports the process CPU time per operation since start.
func reportCPU(b *testing.B, start int64) {
	b.ReportMetric(float64(cpuNanos()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkProducers runs N producer goroutines, one lane each, into one
// consumer; a producer meeting a full lane yields and retries.
func BenchmarkProducers(b *testing.B) {
	for _, n := range []int{2, 8, 64} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			m := New[uint64]()
			ls := make([]*Lane[uint64], n)
			for i := range ls {
				ls[i], _ = m.AddLane(uint64(i), 256)
			}
			per := b.N/n + 1
			total := per * n
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l := ls[i]
					for k := 0; k < per; {
						if l.TryPush(uint64(k), uint64(k)) {
							k++
						} else {
							runtime.Gosched()
						}
					}
				}()
			}
			for got := 0; got < total; {
				if _, _, ok := m.TryPop(^uint64(0)); ok {
					got++
				} else {
					runtime.Gosched()
				}
			}
			wg.Wait()
			b.ReportMetric(float64(total)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkAtomicFloor measures, on the machine at hand, the two locked
// instructions a heap-mode round trip cannot avoid: the producer's Or and
// the consumer's Swap. It puts the heap-mode cells in context.
func BenchmarkAtomicFloor(b *testing.B) {
	// A b.N loop, not b.Loop: b.Loop keeps call results alive, which turns
	// the Or into a compare-and-swap loop; TryPush drops the result, so its
	// Or is a single LOCK OR, as here.
	var w atomic.Uint64
	b.Run("or", func(b *testing.B) {
		for range b.N {
			w.Or(1)
		}
	})
	b.Run("swap", func(b *testing.B) {
		for range b.N {
			w.Swap(0)
		}
	})
}
