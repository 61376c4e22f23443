package ringbuf

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewMPSCCapacity(t *testing.T) {
	q, err := NewMPSC[int](5)
	require.NoError(t, err)
	assert.Equal(t, 8, q.Cap())
	for _, bad := range []int{0, -3, MaxCapacity + 1} {
		_, err := NewMPSC[int](bad)
		assert.ErrorIs(t, err, ErrCapacity)
	}
}

func TestMPSCBasic(t *testing.T) {
	q, err := NewMPSC[string](4)
	require.NoError(t, err)
	_, _, ok := q.TryPop()
	assert.False(t, ok)

	tk, ok := q.TryPush("a")
	require.True(t, ok)
	assert.Equal(t, uint64(0), tk)
	first, ok := q.TryPushN([]string{"b", "c", "d"})
	require.True(t, ok)
	assert.Equal(t, uint64(1), first)
	_, ok = q.TryPush("e")
	assert.False(t, ok, "full")
	_, ok = q.TryPushN([]string{"x", "y", "z", "w", "v"})
	assert.False(t, ok, "longer than Cap")
	_, ok = q.TryPushN(nil)
	assert.False(t, ok, "empty batch")
	assert.Equal(t, 4, q.Len())

	v, tk, ok := q.TryPop()
	require.True(t, ok)
	assert.Equal(t, "a", v)
	assert.Equal(t, uint64(0), tk)
	_, ok = q.TryPushN([]string{"e", "f"})
	assert.False(t, ok, "all or nothing: one slot free, two asked")
	dst := make([]string, 8)
	first, n := q.TryPopN(dst)
	assert.Equal(t, uint64(1), first)
	assert.Equal(t, []string{"b", "c", "d"}, dst[:n])
	for i := range q.slots {
		assert.Empty(t, q.slots[i].val, "consumed slots are cleared")
	}
}

func TestMPSCUnpublishedClaimBlocksOnlyConsumer(t *testing.T) {
	q, err := NewMPSC[int](4)
	require.NoError(t, err)
	// Claim a ticket without publishing it, as a descheduled producer would.
	held, ok := q.claim(1)
	require.True(t, ok)
	tk, ok := q.TryPush(7)
	require.True(t, ok, "other producers are not held up")
	assert.Equal(t, held+1, tk)
	_, _, ok = q.TryPop()
	assert.False(t, ok, "the consumer returns at once instead of spinning")
	_, n := q.TryPopN(make([]int, 4))
	assert.Zero(t, n)

	q.slots[held&q.mask].val = 6
	q.slots[held&q.mask].seq.Store(held + 1)
	first, n := q.TryPopN(make([]int, 4))
	assert.Equal(t, held, first)
	assert.Equal(t, 2, n)
}

func TestMPSCTail(t *testing.T) {
	q, err := NewMPSC[int](4)
	require.NoError(t, err)
	q.setTickets(1<<64 - 2) // the tickets cross the 2^64 wrap below
	assert.Equal(t, uint64(1<<64-2), q.Tail(), "empty")
	held, ok := q.claim(1)
	require.True(t, ok)
	assert.Equal(t, held+1, q.Tail(), "a claim counts before it is published")
	_, ok = q.TryPushN([]int{1, 2})
	require.True(t, ok)
	assert.Equal(t, uint64(1), q.Tail(), "three claimed, past the wrap")
	_, ok = q.TryPushN([]int{3, 4})
	assert.False(t, ok, "full")
	assert.Equal(t, uint64(1), q.Tail(), "a failed push claims nothing")
	q.slots[held&q.mask].seq.Store(held + 1)
	_, n := q.TryPopN(make([]int, 4))
	assert.Equal(t, 3, n)
	assert.Equal(t, uint64(1), q.Tail(), "pops do not move it")
}

func TestMPSCTicketWrap(t *testing.T) {
	for _, start := range []uint64{1<<32 - 3, 1<<64 - 3, 1<<64 - 1} {
		q, err := NewMPSC[uint64](4)
		require.NoError(t, err)
		q.setTickets(start)
		_, _, ok := q.TryPop()
		require.False(t, ok, "fresh slots never look published")
		want := start
		for round := range 12 {
			if round%2 == 0 {
				tk, ok := q.TryPush(start + uint64(round))
				require.True(t, ok)
				_ = tk
			} else {
				_, ok := q.TryPushN([]uint64{1, 2, 3})
				require.True(t, ok)
			}
			buf := make([]uint64, 4)
			first, n := q.TryPopN(buf)
			require.Equal(t, want, first, "start %#x round %d", start, round)
			want += uint64(n)
		}
		assert.Equal(t, start+6+18, want)
	}
}

// TestMPSCStress runs 8 producers on GOMAXPROCS=2, mixing single pushes and
// batch claims, and checks exactly-once delivery, per-producer FIFO order and
// that batch claims arrive contiguously.
func TestMPSCStress(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	const producers = 8
	perProducer := 250_000
	if testing.Short() {
		perProducer = 25_000
	}
	type msg struct {
		producer, seq, batch int // batch: length of the claim it belongs to, 0 if single
	}
	q, err := NewMPSC[msg](256)
	require.NoError(t, err)

	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var batch [7]msg
			for seq := 0; seq < perProducer; {
				if p%2 == 1 && seq%3 == 0 {
					k := min(1+seq%len(batch), perProducer-seq)
					for i := range k {
						batch[i] = msg{p, seq + i, k}
					}
					for {
						if _, ok := q.TryPushN(batch[:k]); ok {
							break
						}
						runtime.Gosched()
					}
					seq += k
					continue
				}
				for {
					if _, ok := q.TryPush(msg{p, seq, 0}); ok {
						break
					}
					runtime.Gosched()
				}
				seq++
			}
		}()
	}

	next := make([]int, producers)
	buf := make([]msg, 64)
	var want uint64
	var inBatch, batchLeft int
	for total := 0; total < producers*perProducer; {
		first, n := q.TryPopN(buf)
		if n == 0 {
			runtime.Gosched()
			continue
		}
		require.Equal(t, want, first, "tickets are contiguous")
		want += uint64(n)
		for _, m := range buf[:n] {
			require.Equal(t, next[m.producer], m.seq, "producer %d FIFO", m.producer)
			next[m.producer]++
			if batchLeft > 0 {
				require.Equal(t, inBatch, m.producer, "a batch claim is contiguous")
				batchLeft--
			} else if m.batch > 0 {
				inBatch, batchLeft = m.producer, m.batch-1
			}
		}
		total += n
	}
	wg.Wait()
	for p := range producers {
		assert.Equal(t, perProducer, next[p])
	}
	_, _, ok := q.TryPop()
	assert.False(t, ok)
}

func TestMPSCNoAllocs(t *testing.T) {
	q, err := NewMPSC[[64]byte](64)
	require.NoError(t, err)
	var v [64]byte
	buf := make([][64]byte, 8)
	allocs := testing.AllocsPerRun(1000, func() {
		q.TryPush(v)
		q.TryPop()
		q.TryPushN(buf)
		q.TryPopN(buf)
		_ = q.Len()
	})
	assert.Zero(t, allocs)
}
