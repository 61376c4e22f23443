package ledger

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHistogramBuckets(t *testing.T) {
	for _, first := range []uint64{1, 3, walSyncFirstBucket} {
		h := &histogram{first: first}
		var want [HistogramBuckets + 1]uint64
		var sum uint64
		obs := func(v uint64, bucket int) {
			h.observe(v)
			want[bucket]++
			sum += v
		}
		obs(0, 0)
		obs(1, 0)
		obs(first, 0)
		for i := 1; i < HistogramBuckets; i++ {
			b := first << i
			obs(b, i) // a bound is in its own bucket
			if b-1 > first<<(i-1) {
				obs(b-1, i) // ... as is anything above the previous bound
			}
			obs((first<<(i-1))+1, i) // ... down to just above it
		}
		obs(first<<(HistogramBuckets-1)+1, HistogramBuckets)
		obs(math.MaxUint64/2, HistogramBuckets)
		s := h.load()
		require.Equal(t, want, s.Counts, "first %d", first)
		assert.Equal(t, sum, s.Sum)
		assert.Equal(t, uint64(len(want)), uint64(len(s.Counts)))
		var n uint64
		for _, c := range want {
			n += c
		}
		assert.Equal(t, n, s.Count())
		assert.Equal(t, first<<5, s.Bound(5))
	}
}

// observe is on the WAL goroutine after every sync: no allocation.
func TestHistogramNoAlloc(t *testing.T) {
	h := &histogram{first: walSyncFirstBucket}
	v := uint64(1)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { h.observe(v); v = v*3 + 1 }))
}

func BenchmarkHistogramObserve(b *testing.B) {
	h := &histogram{first: walSyncFirstBucket}
	v := uint64(1)
	for b.Loop() {
		h.observe(v)
		v = v*3 + 1
	}
}
