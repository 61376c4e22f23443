package ledger

import (
	"container/heap"
	"sync"
	"sync/atomic"
)

// opWaiter carries the outcome of a SubmitAndWait transaction. The request
// holds a pointer to it through the pipeline; the stage that brings the
// transaction to level fills res and sends one token on done. The send
// happens before the waiter's receive, so res is visible to it.
type opWaiter struct {
	done chan struct{} // capacity 1
	res  Result
	// fn, for SubmitFunc, is called with the result instead of a send on
	// done; while it is pending the waiter is linked into Ledger.fns.
	fn         func(Result, error)
	prev, next *opWaiter
	listed     bool
}

var opWaiterPool = sync.Pool{New: func() any { return &opWaiter{done: make(chan struct{}, 1)} }}

// deliverOne hands r's result to its waiter, on the stage that brought r to
// its wait level: a send on done, or the SubmitFunc callback.
func (l *Ledger) deliverOne(w *opWaiter, r *txRecord) {
	if w.fn == nil {
		w.res = r.result()
		w.done <- struct{}{}
		return
	}
	if !l.fns.remove(w) {
		return // swept: the failure was reported instead
	}
	fn := w.fn
	w.fn = nil
	opWaiterPool.Put(w)
	fn(r.result(), nil)
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
