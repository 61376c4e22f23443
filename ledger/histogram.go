package ledger

import (
	"math/bits"
	"sync/atomic"
)

// HistogramBuckets is the number of finite buckets of a Histogram.
const HistogramBuckets = 16

// Histogram is a snapshot of a distribution counted in fixed buckets whose
// upper bounds double: Counts[i] is the number of observations v with
// Bound(i-1) < v <= Bound(i), and Counts[HistogramBuckets] those above the
// last bound. The counts are not cumulative.
type Histogram struct {
	// First is the upper bound of the first bucket.
	First uint64
	// Counts are the observations per bucket.
	Counts [HistogramBuckets + 1]uint64
	// Sum is the sum of the observed values.
	Sum uint64
}

// Bound returns the inclusive upper bound of bucket i < HistogramBuckets:
// First<<i.
func (h *Histogram) Bound(i int) uint64 { return h.First << i }

// Count returns the number of observations (the sum of Counts).
func (h *Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// histogram counts observations from one goroutine for readers anywhere:
// two atomic adds per observation, no lock, no allocation. A snapshot is
// consistent per bucket; its Sum and counts may disagree by the
// observations made while it was being read.
type histogram struct {
	first  uint64 // set before the writer starts
	counts [HistogramBuckets + 1]atomic.Uint64
	sum    atomic.Uint64
}

// observe counts v in the smallest bucket whose bound is >= v: for v above
// first, bucket bits.Len64((v-1)/first), since (v-1)/first lies in
// [2^(i-1), 2^i) exactly when first<<(i-1) < v <= first<<i.
func (h *histogram) observe(v uint64) {
	i := 0
	if v > h.first {
		i = min(bits.Len64((v-1)/h.first), HistogramBuckets)
	}
	h.counts[i].Add(1)
	h.sum.Add(v)
}

func (h *histogram) load() Histogram {
	s := Histogram{First: h.first, Sum: h.sum.Load()}
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
	}
	return s
}
