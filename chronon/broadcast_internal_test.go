package chronon

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/frontier"
)

func names(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprint("conn", i)
	}
	return s
}

func TestSharedCursorsAligned(t *testing.T) {
	for n := 1; n < 40; n++ {
		sh := newShared[uint64](8, names(n))
		for i := range sh.curs {
			assert.Zero(t, uintptr(unsafe.Pointer(&sh.curs[i]))%cacheLine, "cursor %d of %d", i, len(sh.curs))
		}
	}
	assert.Equal(t, uintptr(cacheLine), unsafe.Sizeof(cursor{}))
}

// TestSharedWraparound pushes many times the ring's size through three
// readers that each keep a different backlog.
func TestSharedWraparound(t *testing.T) {
	sh := newShared[uint64](8, names(3))
	rs := []*reader[uint64]{newReader(sh, 0, 0, false), newReader(sh, 1, 1, true), newReader(sh, 2, 2, true)}
	next := make([]uint64, len(rs))
	for v := range uint64(1000) {
		m := msg[uint64]{arrive: v, v: v}
		require.Equal(t, -1, sh.put(&m), "push %d", v)
		for i, r := range rs {
			// Reader i keeps up to 2*i+1 messages unconsumed.
			for v+1-next[i] > uint64(2*i+1) {
				p := r.peek()
				require.NotNil(t, p)
				assert.Equal(t, next[i], p.v)
				assert.Equal(t, next[i], p.arrive)
				if r.fix {
					assert.Equal(t, uint32(i), p.lane)
				}
				r.advance()
				next[i]++
			}
		}
	}
	assert.Equal(t, uint64(1000), sh.tail.Load())
}

// TestSharedSlowReader: one reader that does not consume fills the ring
// for everyone; the producer names its cursor and writes nothing, and
// reuses the ring once that reader moves.
func TestSharedSlowReader(t *testing.T) {
	sh := newShared[uint64](4, names(3))
	rs := []*reader[uint64]{newReader(sh, 0, 0, false), newReader(sh, 1, 1, false), newReader(sh, 2, 2, false)}
	for v := range uint64(4) {
		m := msg[uint64]{v: v}
		require.Equal(t, -1, sh.put(&m))
		rs[0].advance()
		rs[2].advance()
	}
	m := msg[uint64]{v: 4}
	assert.Equal(t, 1, sh.put(&m), "reader 1 is 4 behind")
	assert.Equal(t, uint64(4), sh.tail.Load(), "nothing written")
	assert.Equal(t, uint64(0), rs[1].peek().v, "the slow reader's data is intact")
	rs[1].advance()
	require.Equal(t, -1, sh.put(&m))
	for want := uint64(1); want <= 4; want++ {
		require.Equal(t, want, rs[1].peek().v)
		rs[1].advance()
	}
	assert.Nil(t, rs[1].peek())
	assert.Equal(t, uint64(4), rs[0].peek().v)
}

// TestSharedConcurrent is a real multi-goroutine stress: one producer and
// four readers on a small ring, the producer retrying while the slowest
// reader holds the ring full. Under the race detector this also checks the
// publication and reuse orderings.
func TestSharedConcurrent(t *testing.T) {
	const n = 200000
	sh := newShared[[4]uint64](16, names(4))
	var wg sync.WaitGroup
	for i := range sh.curs {
		r := newReader(sh, i, uint32(i), i%2 == 1)
		wg.Go(func() {
			for want := uint64(0); want < n; {
				p := r.peek()
				if p == nil {
					runtime.Gosched()
					continue
				}
				if p.v != [4]uint64{want, want * 3, ^want, want + 7} || p.arrive != want {
					t.Errorf("reader %d: got %v at %d, want %d", i, p.v, p.arrive, want)
					return
				}
				r.advance()
				want++
			}
		})
	}
	for v := uint64(0); v < n; {
		m := msg[[4]uint64]{arrive: v, v: [4]uint64{v, v * 3, ^v, v + 7}}
		if sh.put(&m) >= 0 {
			runtime.Gosched()
			continue
		}
		v++
	}
	wg.Wait()
}

// TestReaderFlushMirrorsFrontier drives a frontier lane and a reader of the
// same size with the same random pushes, pops and selective flushes: they
// must deliver the same messages and refuse the same pushes, which is what
// makes overflow identical with and without the broadcast transport.
func TestReaderFlushMirrorsFrontier(t *testing.T) {
	for _, size := range []int{1, 2, 4, 8, 64} {
		for seed := range uint64(20) {
			fm := frontier.New[msg[uint64]]()
			fl, err := fm.AddLane(0, size)
			require.NoError(t, err)
			sh := newShared[uint64](size, names(1))
			r := newReader(sh, 0, 0, false)
			x := seed*977 + uint64(size)
			rnd := func(n uint64) uint64 { x = x*6364136223846793005 + 1442695040888963407; return (x >> 33) % n }
			var v uint64
			for step := range 3000 {
				switch op := rnd(10); {
				case op < 5:
					m := msg[uint64]{arrive: v, v: v}
					okF := fl.TryPush(v, m)
					okS := sh.put(&m) < 0
					require.Equal(t, okF, okS, "size %d seed %d step %d: push %d", size, seed, step, v)
					v++
				case op < 8:
					a, _, okA := fm.TryPop(^uint64(0))
					p := r.peek()
					require.Equal(t, okA, p != nil, "size %d seed %d step %d: pop", size, seed, step)
					if okA {
						require.Equal(t, a.v, p.v)
						r.advance()
					}
				default:
					k, mod := rnd(3), rnd(4)+2
					drop := func(_ uint64, m *msg[uint64]) bool { return m.v%mod == k }
					require.Equal(t, fm.FlushIf(drop), r.flushIf(drop), "size %d seed %d step %d: flush", size, seed, step)
				}
			}
		}
	}
}
