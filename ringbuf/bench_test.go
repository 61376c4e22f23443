package ringbuf

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// Payload sizes of the handoff benchmarks. 144 bytes is where a C++ build of
// this ring design aborts on the reference machine; it works here.
type (
	p8   struct{ a uint64 }
	p64  [8]uint64
	p144 [18]uint64
	p256 [32]uint64
)

// backoff is the benchmarks' waiting policy for a full or empty ring: spin a
// little, then yield so a peer sharing the P can run.
type backoff int

func (b *backoff) wait() {
	*b++
	if *b&63 == 0 {
		runtime.Gosched()
		return
	}
	// Pause before polling again: a poll reads the line the peer is
	// writing, and re-reading it at once steals the line back on every
	// push. The loop touches no shared memory.
	for i := 0; i < pauseSpins; i++ {
		pauseSink += i
	}
}

var pauseSink int

const pauseSpins = 20

func BenchmarkLocalRoundTrip(b *testing.B) {
	b.Run("spsc", func(b *testing.B) {
		r, _ := NewSPSC[p8](1024)
		for i := range b.N {
			r.TryPush(p8{uint64(i)})
			r.TryPop()
		}
	})
	b.Run("chan", func(b *testing.B) {
		c := make(chan p8, 1024)
		for i := range b.N {
			c <- p8{uint64(i)}
			<-c
		}
	})
}

func BenchmarkHandoff(b *testing.B) {
	handoff[p8](b, "8B")
	handoff[p64](b, "64B")
	handoff[p144](b, "144B")
	handoff[p256](b, "256B")
}

const handoffCap = 1024

// seq is the first word of a payload: every handoff benchmark carries its
// element's sequence number there and the consumer checks the order, the
// work the reference's DirectSPSC benchmark does per element.
func seq[T any](v *T) *uint64 { return (*uint64)(unsafe.Pointer(v)) }

// checkOrder fails b if got is not the sequence number want.
func checkOrder(b *testing.B, got uint64, want int) {
	if got != uint64(want) {
		b.Fatalf("element %d arrived as %d", want, got)
	}
}

func handoff[T any](b *testing.B, size string) {
	// One element at a time. The producer builds each element in its slot
	// (Claim, write, Commit): the sequence number in the first word and
	// zeros after it, the reference's DirectSPSC payload. The consumer reads
	// the sequence in the slot and drops it (no copy out), as the
	// reference's consumeReady does. The reference builds the message on its
	// stack and moves it in; spsc-push is the same copy-in here (TryPush),
	// and spsc-fullwrite builds in place with every word non-zero.
	b.Run(size+"/spsc", func(b *testing.B) { handoffOne[T](b, buildInPlace) })
	b.Run(size+"/spsc-push", func(b *testing.B) { handoffOne[T](b, copyIn) })
	b.Run(size+"/spsc-fullwrite", func(b *testing.B) { handoffOne[T](b, fillInPlace) })
	b.Run(size+"/spsc-batch64", func(b *testing.B) {
		r, _ := NewSPSC[T](handoffCap)
		done := make(chan struct{})
		go func() {
			defer close(done)
			src := make([]T, 64)
			var bo backoff
			for i := 0; i < b.N; {
				n := min(64, b.N-i)
				for j := range src[:n] {
					*seq(&src[j]) = uint64(i + j)
				}
				if k := r.TryPushN(src[:n]); k > 0 {
					i += k
				} else {
					bo.wait()
				}
			}
		}()
		dst := make([]T, 64)
		var bo backoff
		for i := 0; i < b.N; {
			if n := r.TryPopN(dst); n > 0 {
				for j := range dst[:n] {
					checkOrder(b, *seq(&dst[j]), i+j)
				}
				i += n
			} else {
				bo.wait()
			}
		}
		<-done
	})
	b.Run(size+"/chan", func(b *testing.B) {
		c := make(chan T, handoffCap)
		go func() {
			for i := range b.N {
				var v T
				*seq(&v) = uint64(i)
				c <- v
			}
		}()
		for i := range b.N {
			v := <-c
			checkOrder(b, *seq(&v), i)
		}
	})
}

// How a handoffOne producer puts element i into the ring.
const (
	buildInPlace = iota // Claim, zero the slot, write i to the first word, Commit
	copyIn              // build the value on the stack, TryPush it
	fillInPlace         // Claim, write i+k to every word k, Commit
)

// handoffOne runs b.N elements through a ring from a producer goroutine to a
// consumer that reads each element's sequence number in place and drops it.
// Each producer way is its own loop, so no call through a func value sits
// in the measured path.
func handoffOne[T any](b *testing.B, way int) {
	r, _ := NewSPSC[T](handoffCap)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var bo backoff
		for i := 0; i < b.N; {
			switch way {
			case buildInPlace:
				if p := r.Claim(); p != nil {
					var zero T
					*p = zero
					*seq(p) = uint64(i)
					r.Commit(1)
					i++
					continue
				}
			case copyIn:
				var v T
				*seq(&v) = uint64(i)
				if r.TryPush(v) {
					i++
					continue
				}
			case fillInPlace:
				if p := r.Claim(); p != nil {
					w := unsafe.Slice(seq(p), unsafe.Sizeof(*p)/8)
					for k := range w {
						w[k] = uint64(i) + uint64(k)
					}
					r.Commit(1)
					i++
					continue
				}
			}
			bo.wait()
		}
	}()
	var bo backoff
	for i := 0; i < b.N; {
		if p := r.Peek(); p != nil {
			checkOrder(b, *seq(p), i)
			r.Drop()
			i++
		} else {
			bo.wait()
		}
	}
	<-done
}

// BenchmarkLinePingPong measures the host, not the ring: two goroutines
// hand one cache line back and forth, and ns/op is one one-way transfer.
// The unbatched 256 B handoff costs about one such transfer per element,
// and the transfer time changes with where the host runs the two vCPUs
// (docs/ringbuf.md, "The 256 B slow mode"); run it beside Handoff to read
// a handoff figure against the host it ran on.
func BenchmarkLinePingPong(b *testing.B) {
	var line struct {
		v atomic.Uint64
		_ [cacheLinePad - 8]byte
	}
	n := uint64(b.N+1) / 2
	await := func(want uint64) {
		for spins := 1; line.v.Load() != want; spins++ {
			if spins&1023 == 0 {
				runtime.Gosched() // one P: let the peer run
			}
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(1); i <= n; i++ {
			await(2*i - 1)
			line.v.Store(2 * i)
		}
	}()
	for i := uint64(1); i <= n; i++ {
		line.v.Store(2*i - 1)
		await(2 * i)
	}
	<-done
}

func BenchmarkMPSC(b *testing.B) {
	for _, producers := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("producers=%d/mpsc", producers), func(b *testing.B) {
			q, _ := NewMPSC[p8](handoffCap)
			var wg sync.WaitGroup
			for p := range producers {
				n := b.N / producers
				if p == 0 {
					n += b.N % producers
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < n; {
						if _, ok := q.TryPush(p8{uint64(i)}); ok {
							i++
						} else {
							// More producers than Ps: a full ring
							// means the consumer needs a P now.
							runtime.Gosched()
						}
					}
				}()
			}
			dst := make([]p8, 64)
			var bo backoff
			for i := 0; i < b.N; {
				if _, n := q.TryPopN(dst); n > 0 {
					i += n
				} else {
					bo.wait()
				}
			}
			wg.Wait()
		})
		b.Run(fmt.Sprintf("producers=%d/chan", producers), func(b *testing.B) {
			c := make(chan p8, handoffCap)
			for p := range producers {
				n := b.N / producers
				if p == 0 {
					n += b.N % producers
				}
				go func() {
					for i := range n {
						c <- p8{uint64(i)}
					}
				}()
			}
			for range b.N {
				<-c
			}
		})
	}
}
