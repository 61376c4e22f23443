package ledger

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// SubmitBatchFunc sequences ops atomically like SubmitBatch and arranges
// for fn to be called once per op, with its Result, when that op reaches
// level (Computed, Committed or Snapshot): the per-op results of a batch,
// each op's id, kind and fail reason (Result.ID - first is the op's index).
// The calls come from the stages, in id order per stage, and follow the
// rules of SubmitFunc: fn must be quick and must not block. If the ledger
// fails first, fn is called with the error for each op not delivered. If
// SubmitBatchFunc returns an error, nothing was submitted and fn is never
// called.
func (l *Ledger) SubmitBatchFunc(ops []Op, level Level, fn func(Result, error)) (first, last TxID, err error) {
	if level < Computed || level > Snapshot {
		return 0, 0, ErrLevel
	}
	if fn == nil {
		return 0, 0, ErrNilFunc
	}
	return l.submitBatch(ops, fn, level)
}

// SubmitBatchAndWait is SubmitBatchFunc waiting for every result: it
// returns one Result per op, in op order. If ctx ends first, the ops still
// execute; it returns ctx's error and no results.
func (l *Ledger) SubmitBatchAndWait(ctx context.Context, ops []Op, level Level) ([]Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := &batchCollector{done: make(chan struct{}), want: len(ops)}
	if _, _, err := l.SubmitBatchFunc(ops, level, c.put); err != nil {
		return nil, err
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if c.err != nil {
		return nil, c.err
	}
	slices.SortFunc(c.res, func(a, b Result) int { return cmp.Compare(a.ID, b.ID) })
	return c.res, nil
}

// batchCollector gathers a batch's deliveries; done closes after the last.
type batchCollector struct {
	mu   sync.Mutex
	res  []Result
	err  error
	want int
	done chan struct{}
}

func (c *batchCollector) put(r Result, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil && c.err == nil {
		c.err = err
	}
	c.res = append(c.res, r)
	if len(c.res) == c.want {
		close(c.done)
	}
}
