package ringbuf_test

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/lanework/lanework/ringbuf"
)

// A writer fills plain memory and then publishes how much of it is filled
// with StoreRelease; a reader that loads the count may read every value
// below it (the race detector checks exactly this under -race).
func ExampleStoreRelease() {
	var (
		vals  [4]uint64
		count atomic.Uint64
	)
	go func() {
		for i := range uint64(4) {
			vals[i] = 10 * (i + 1)
			ringbuf.StoreRelease(&count, i+1)
		}
	}()
	for count.Load() < 4 {
		runtime.Gosched()
	}
	fmt.Println(vals)
	// Output: [10 20 30 40]
}
