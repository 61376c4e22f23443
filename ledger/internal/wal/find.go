package wal

import (
	"bytes"
	"errors"
	"io"
	"sort"
)

// ErrNotFound: Find or Read was asked for transactions the live segments
// do not hold.
var ErrNotFound = errors.New("wal: transaction not in the log")

// Find calls fn with the batch that holds transaction id, which must be
// durable (Append returned for it). Find only reads.
func (w *Writer) Find(id uint64, fn func(batch []byte) error) error {
	return w.Read(id, id, fn)
}

// Read calls fn, in id order, with every batch that holds a transaction in
// from..to; all of them must be durable (Append returned for to). It
// starts reading at the block of the nearest batch indexed since Create,
// or at the start of a segment written before it, and reads no record
// past the batch holding to, so it never meets the record being appended.
// A segment removed by retention meanwhile is ErrNotFound. Read only reads.
func (w *Writer) Read(from, to uint64, fn func(batch []byte) error) error {
	w.mu.Lock()
	if len(w.segs) == 0 || from > to || from < w.segs[0].First || to >= w.next {
		w.mu.Unlock()
		return ErrNotFound
	}
	i := sort.Search(len(w.segs), func(i int) bool { return w.segs[i].First > from }) - 1
	segs := append([]Segment(nil), w.segs[i:]...)
	start := int64(0)
	if j := sort.Search(len(w.index), func(j int) bool { return w.index[j].first > from }) - 1; j >= 0 && w.index[j].seq == segs[0].Seq {
		start = w.index[j].off &^ (blockSize - 1)
	}
	w.mu.Unlock()
	want := from // the next transaction fn must see
	for k, seg := range segs {
		if seg.First > to {
			return nil
		}
		end := to // the last transaction to read in seg
		if k+1 < len(segs) {
			end = min(to, segs[k+1].First-1)
		}
		if err := w.readSegment(seg, start, &want, end, fn); err != nil {
			return err
		}
		if want > to {
			return nil
		}
		start = 0
	}
	return nil
}

// readSegment calls fn with seg's batches holding transactions in
// *want..end, reading from offset start, and advances *want past them.
func (w *Writer) readSegment(seg Segment, start int64, want *uint64, end uint64, fn func(batch []byte) error) error {
	f, err := w.opts.FS.Open(w.path(seg.Name()))
	if err != nil {
		if isNotExist(err) { // removed by retention meanwhile
			return ErrNotFound
		}
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	r := newReader(io.NewSectionReader(f, start, st.Size()-start), seg.Seq)
	var buf bytes.Buffer
	for *want <= end {
		rec, err := r.Next()
		if err == nil {
			buf.Reset()
			_, err = buf.ReadFrom(rec)
		}
		if err != nil {
			return &CorruptError{File: seg.Name(), Offset: start + r.Offset(), FirstTx: *want, LastTx: end, Reason: "reading a committed transaction: " + err.Error()}
		}
		p := buf.Bytes()
		if len(p) == 0 || p[0] != typeBatch {
			continue // the segment header
		}
		first, last, err := w.opts.Span(p[1:])
		if err != nil {
			return &CorruptError{File: seg.Name(), Offset: start + r.Offset(), FirstTx: *want, LastTx: end, Reason: err.Error()}
		}
		if last < *want {
			continue
		}
		if first > *want {
			return ErrNotFound
		}
		if err := fn(p[1:]); err != nil {
			return err
		}
		*want = last + 1
	}
	return nil
}
