package ledger

import (
	"errors"
	"sync"
	"sync/atomic"
)

// ErrNilFunc is returned by SubmitFunc for a nil callback.
var ErrNilFunc = errors.New("ledger: nil callback")

// SubmitFunc submits op like Submit and arranges for fn to be called once,
// with the transaction's Result, when it reaches level (Computed, Committed
// or Snapshot). If the ledger fails first, fn is called with the error
// instead (and a zero Result); Close delivers every result before it
// returns. If SubmitFunc itself returns an error, op was not submitted and
// fn is never called.
//
// fn runs on the pipeline stage that brought the transaction to level, or
// on the goroutine that reports a failure: it must return quickly, must not
// block, and must not call methods of the ledger that wait. It is the
// server's way to answer a request without parking a goroutine per request:
// a stage delivering a group commit then queues the answers itself, instead
// of readying one goroutine per transaction.
func (l *Ledger) SubmitFunc(op Op, level Level, fn func(Result, error)) (TxID, error) {
	if !level.waitable() {
		return 0, ErrLevel
	}
	if fn == nil {
		return 0, ErrNilFunc
	}
	var r request
	if err := prepare(op, &r); err != nil {
		return 0, &InputError{Err: err}
	}
	r.chainOpen = r.linked // a chain of one op, left open
	w := opWaiterPool.Get().(*opWaiter)
	w.fn = fn
	if !l.fns.add(w) {
		w.fn = nil
		opWaiterPool.Put(w)
		return 0, l.stoppedErr()
	}
	r.w, r.wlevel = w, l.waitLevel(level)
	id, err := l.push(&r)
	if err != nil {
		// Not in the pipeline: nobody else can deliver or sweep w.
		l.fns.remove(w)
		w.fn = nil
		opWaiterPool.Put(w)
		return 0, err
	}
	return id, nil
}

// fnList holds the SubmitFunc waiters not yet delivered, so that a failed
// ledger can call each with its error. Whoever removes a waiter from the
// list (the delivering stage or the sweep) calls its fn: exactly once.
type fnList struct {
	mu    sync.Mutex
	head  *opWaiter
	swept bool // no more adds
	// n counts the listed waiters. A stage that loads 0 skips its delivery
	// pass: a record's waiter was added before its request was pushed, so
	// a stage that holds the record observes the add.
	n atomic.Int64
}

func (f *fnList) add(w *opWaiter) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.swept {
		return false
	}
	w.prev, w.next = nil, f.head
	if f.head != nil {
		f.head.prev = w
	}
	f.head = w
	w.listed = true
	f.n.Add(1)
	return true
}

// remove unlinks w and reports whether it was still listed.
func (f *fnList) remove(w *opWaiter) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !w.listed {
		return false
	}
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		f.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	}
	w.prev, w.next, w.listed = nil, nil, false
	f.n.Add(-1)
	return true
}

// sweep refuses further adds and returns the callbacks still pending.
func (f *fnList) sweep() []func(Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.swept = true
	var fns []func(Result, error)
	for w := f.head; w != nil; {
		next := w.next
		fns = append(fns, w.fn)
		w.prev, w.next, w.listed, w.fn = nil, nil, false, nil
		w = next
	}
	f.head = nil
	f.n.Store(0)
	return fns
}

// sweepFns runs once the pipeline has stopped: after Close every result has
// been delivered; after a failure the transactions still in the rings never
// will be, and their callbacks get the failure.
func (l *Ledger) sweepFns() {
	defer close(l.swept)
	<-l.stopped
	l.wg.Wait()
	if fns := l.fns.sweep(); len(fns) > 0 {
		err := l.stoppedErr()
		for _, fn := range fns {
			fn(Result{}, err)
		}
	}
}
