package ledger

// refEntry is one idempotency key and the transaction that first used it.
type refEntry struct {
	id  uint64
	ref uint64
}

// refWindow is a FIFO of refEntry in id order, trimmed to a window of
// transaction ids. Capacity grows to at most window entries.
type refWindow struct {
	window uint64
	buf    []refEntry // circular
	head   int
	n      int
}

func newRefWindow(window uint64) refWindow {
	return refWindow{window: window, buf: make([]refEntry, min(window, 1<<12)+1)}
}

func (w *refWindow) push(e refEntry) {
	if w.n == len(w.buf) {
		nb := make([]refEntry, 2*len(w.buf))
		w.copyTo(nb)
		w.buf, w.head = nb, 0
	}
	w.buf[(w.head+w.n)%len(w.buf)] = e
	w.n++
}

// trim drops the entries that can no longer match a transaction with id
// next or later (next - id > window), calling drop for each.
func (w *refWindow) trim(next uint64, drop func(refEntry)) {
	for w.n > 0 {
		e := w.buf[w.head]
		if next-e.id <= w.window {
			return
		}
		if drop != nil {
			drop(e)
		}
		w.head = (w.head + 1) % len(w.buf)
		w.n--
	}
}

func (w *refWindow) copyTo(dst []refEntry) int {
	for i := 0; i < w.n; i++ {
		dst[i] = w.buf[(w.head+i)%len(w.buf)]
	}
	return w.n
}

func (w *refWindow) entries() []refEntry {
	out := make([]refEntry, w.n)
	w.copyTo(out)
	return out
}

// dedup is the Transactor's idempotency index: a transaction with a non-zero
// UserRef is a Duplicate if the same ref was used by a transaction at most
// window ids before it, or, with the durable index (idx, refindex.go),
// within the retention; then idx alone answers. Failed transactions count;
// duplicates do not (the original stays the one named).
type dedup struct {
	fifo  refWindow
	byRef map[uint64]uint64
	idx   *refIndex // nil: the window only (DedupRetention < 0)
}

func newDedup(window uint64) *dedup {
	return &dedup{fifo: newRefWindow(window), byRef: make(map[uint64]uint64, min(window, 1<<16))}
}

// lookup reports the original of ref for transaction id, after forgetting
// what fell out of the window.
func (d *dedup) lookup(id, ref uint64) (uint64, bool) {
	if d.idx != nil {
		return d.idx.lookup(id, ref)
	}
	d.fifo.trim(id, d.forget)
	o, ok := d.byRef[ref]
	return o, ok
}

func (d *dedup) forget(e refEntry) {
	if d.byRef[e.ref] == e.id {
		delete(d.byRef, e.ref)
	}
}

func (d *dedup) add(id, ref uint64) {
	if d.idx != nil {
		d.idx.add(id, ref)
		return
	}
	d.fifo.push(refEntry{id: id, ref: ref})
	d.byRef[ref] = id
}

// touch loads ref's slot of the durable index's table (see executor.touch).
func (d *dedup) touch(ref uint64) int64 {
	if d.idx == nil {
		return 0
	}
	t := &d.idx.table
	return int64(t.slots[t.home(refHash(ref))].id)
}

// startRun tells the durable index the next id and the timestamp of the
// Transactor's run.
func (d *dedup) startRun(next uint64, ts int64) {
	if d.idx != nil {
		d.idx.startRun(next, ts)
	}
}
