package chronon

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	rs := []*reader[uint64]{newReader(sh, 0), newReader(sh, 1), newReader(sh, 2)}
	next := make([]uint64, len(rs))
	for v := range uint64(1000) {
		m := msg[uint64]{arrive: v, v: v}
		require.Equal(t, -1, sh.put(&m), "push %d", v)
		for i, r := range rs {
			// Reader i keeps up to 2*i+1 messages unconsumed.
			for v+1-next[i] > uint64(2*i+1) {
				p := r.slot()
				require.NotNil(t, p)
				assert.Equal(t, next[i], p.v)
				assert.Equal(t, next[i], p.arrive)
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
	rs := []*reader[uint64]{newReader(sh, 0), newReader(sh, 1), newReader(sh, 2)}
	for v := range uint64(4) {
		m := msg[uint64]{v: v}
		require.Equal(t, -1, sh.put(&m))
		rs[0].advance()
		rs[2].advance()
	}
	m := msg[uint64]{v: 4}
	assert.Equal(t, 1, sh.put(&m), "reader 1 is 4 behind")
	assert.Equal(t, uint64(4), sh.tail.Load(), "nothing written")
	assert.Equal(t, uint64(0), rs[1].slot().v, "the slow reader's data is intact")
	rs[1].advance()
	require.Equal(t, -1, sh.put(&m))
	for want := uint64(1); want <= 4; want++ {
		require.Equal(t, want, rs[1].slot().v)
		rs[1].advance()
	}
	assert.Nil(t, rs[1].slot())
	assert.Equal(t, uint64(4), rs[0].slot().v)
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
		r := newReader(sh, i)
		wg.Go(func() {
			for want := uint64(0); want < n; {
				p := r.slot()
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
