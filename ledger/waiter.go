package ledger

import (
	"container/heap"
	"sync"
	"sync/atomic"
)

// opWaiter is a transaction's pending delivery: the request carries a
// pointer to it through the pipeline, and the stage that brings the
// transaction to its wait level calls fn with the result. While pending it
// is linked into Ledger.fns, so that a failure can call fn instead: fn runs
// exactly once, called by whoever unlinks the waiter. SubmitFunc is this
// mechanism; SubmitAndWait blocks on it (see resultWait).
type opWaiter struct {
	fn         func(Result, error)
	prev, next *opWaiter
	listed     bool
}

var opWaiterPool = sync.Pool{New: func() any { return new(opWaiter) }}

// deliverOne hands r's result to its waiter, on the stage that brought r to
// its wait level.
func (l *Ledger) deliverOne(w *opWaiter, r *txRecord) {
	if !l.fns.remove(w) {
		return // swept: the failure was reported instead
	}
	fn := w.fn
	w.fn = nil
	opWaiterPool.Put(w)
	fn(r.result(), nil)
}

// resultWait turns one SubmitFunc delivery into a blocking wait. Its
// callback is bound once per pooled value, so a SubmitAndWait allocates no
// closure. The send on done happens before the waiter's receive, so res and
// err are visible to it.
type resultWait struct {
	done    chan struct{} // capacity 1: the callback never blocks
	res     Result
	err     error
	deliver func(Result, error) // w.put
}

var resultWaitPool = sync.Pool{New: func() any {
	w := &resultWait{done: make(chan struct{}, 1)}
	w.deliver = w.put
	return w
}}

func (w *resultWait) put(res Result, err error) {
	w.res, w.err = res, err
	w.done <- struct{}{}
}

// take returns the delivered outcome and recycles w.
func (w *resultWait) take() (Result, error) {
	res, err := w.res, w.err
	w.res, w.err = Result{}, nil
	resultWaitPool.Put(w)
	return res, err
}

// idWaiter is a Wait call blocked on one id.
type idWaiter struct {
	id    TxID
	index int // in the heap; -1 once released or removed
	done  chan struct{}
}

// waitList holds the Wait calls of one level in a min-heap by id. The stage
// that advances the level calls release after storing the new index. The
// cost while nobody waits is one atomic load of n.
//
// Lost-wakeup argument: a waiter increments n (under mu, after pushing) and
// then loads the index; the stage stores the index and then loads n. Both are
// sequentially consistent atomics, so either the stage sees n > 0 and takes
// mu (and then sees the waiter, pushed before n was incremented under the
// same lock), or the waiter sees the new index and returns by itself.
type waitList struct {
	n  atomic.Int32
	mu sync.Mutex
	h  waitHeap
}

func (l *waitList) add(w *idWaiter) {
	l.mu.Lock()
	heap.Push(&l.h, w)
	l.n.Add(1)
	l.mu.Unlock()
}

// remove takes w out if it is still queued.
func (l *waitList) remove(w *idWaiter) {
	l.mu.Lock()
	if w.index >= 0 {
		heap.Remove(&l.h, w.index)
		l.n.Add(-1)
	}
	l.mu.Unlock()
}

// release wakes every waiter with id <= upTo.
func (l *waitList) release(upTo TxID) {
	if l.n.Load() == 0 {
		return
	}
	l.mu.Lock()
	for len(l.h) > 0 && l.h[0].id <= upTo {
		w := heap.Pop(&l.h).(*idWaiter)
		l.n.Add(-1)
		close(w.done)
	}
	l.mu.Unlock()
}

type waitHeap []*idWaiter

func (h waitHeap) Len() int           { return len(h) }
func (h waitHeap) Less(i, j int) bool { return h[i].id < h[j].id }
func (h waitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *waitHeap) Push(x any) {
	w := x.(*idWaiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waitHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	w.index = -1
	*h = old[:len(old)-1]
	return w
}
