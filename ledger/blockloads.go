package ledger

import (
	"context"
	"sync"
	"sync/atomic"
)

// refLoadsMax is how many reference blocks one read loads at a time. An
// old block's span is a pread from the disk (closed kept segments leave
// the page cache), and the disk serves several at once where one after
// another each waits out the last.
const refLoadsMax = 8

// loadBlocks loads the reference blocks bs (decoded, not loaded) from the
// kept segments, up to refLoadsMax at a time, and calls use(i, b) with
// each one loaded, on the goroutine that loaded it (so use runs
// concurrently with itself); b's span is reused once use returns. It
// returns once every load it started has ended, with the error of the
// first block in bs's order whose load or use failed, or ctx's error: a
// failure stops the blocks not yet started, and every block before a
// failed one was started before it, so the error is the one a load in
// order would meet first.
func loadBlocks(ctx context.Context, kept *keptSegments, bs []block, use func(i int, b *block) error) error {
	var (
		next, bad atomic.Int64
		mu        sync.Mutex
		badErr    error
	)
	bad.Store(int64(len(bs)))
	work := func() {
		var span []byte
		var at []uint32
		for {
			i := next.Add(1) - 1
			if i >= bad.Load() || i >= int64(len(bs)) {
				return
			}
			b := &bs[i]
			b.span, b.at = span, at
			err := ctx.Err()
			if err == nil {
				err = b.load(kept)
			}
			if err == nil {
				err = use(int(i), b)
			}
			span, at = b.span, b.at
			b.span, b.at, b.loaded = nil, nil, false
			if err != nil {
				mu.Lock()
				if i < bad.Load() {
					bad.Store(i)
					badErr = err
				}
				mu.Unlock()
				return
			}
		}
	}
	var wg sync.WaitGroup
	for range min(len(bs), refLoadsMax) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
	return badErr
}
