package frontier

import (
	"sync/atomic"
	"unsafe"
)

const (
	// heapThreshold is the lane count from which the consumer keeps a heap
	// fed by notification bits instead of scanning every lane head.
	heapThreshold = 32

	// cacheLine is the alignment of a notification word; shardStride words
	// (128 bytes) separate two words, which also keeps them apart under the
	// adjacent-line prefetcher.
	cacheLine   = 64
	shardStride = 128 / 8
)

// notifier holds one 64-bit notification word per 64 lanes. Bit r%64 of word
// r/64 means "lane of rank r may have become non-empty". Producers set bits
// with Or; only the consumer clears them, with Swap.
type notifier struct {
	// words starts at the first line-aligned word; word w is
	// words[w*shardStride], and len(words) is (n-1)*shardStride+1, so that
	// a loop stepping by shardStride below len(words) needs no bounds check.
	words []atomic.Uint64
	n     int // number of words in use
}

func newNotifier(lanes int) notifier {
	n := (lanes + 63) / 64
	// One spare line of words lets the first word start on a line boundary;
	// the allocation is 8-byte aligned, so off is in [0, 8).
	words := make([]atomic.Uint64, n*shardStride+cacheLine/8)
	mis := uintptr(unsafe.Pointer(&words[0])) % cacheLine
	off := int((cacheLine-mis)%cacheLine) / 8
	return notifier{words: words[off : off+(n-1)*shardStride+1], n: n}
}

// word returns the notification word of shard w.
func (nt *notifier) word(w int) *atomic.Uint64 {
	return &nt.words[w*shardStride]
}
