package wal

import (
	"bytes"
	"errors"
	"io"
	"sort"
)

// ErrNotFound: Find was asked for a transaction the live segments do not hold.
var ErrNotFound = errors.New("wal: transaction not in the log")

// Find calls fn with the batch that holds transaction id, which must be
// durable (Append returned for it). It starts reading at the block of the
// nearest batch indexed since Create, or at the start of a segment written
// before it. Find only reads.
func (w *Writer) Find(id uint64, fn func(batch []byte) error) error {
	w.mu.Lock()
	if len(w.segs) == 0 || id < w.segs[0].First || id >= w.next {
		w.mu.Unlock()
		return ErrNotFound
	}
	i := sort.Search(len(w.segs), func(i int) bool { return w.segs[i].First > id }) - 1
	seg := w.segs[i]
	start := int64(0)
	if j := sort.Search(len(w.index), func(j int) bool { return w.index[j].first > id }) - 1; j >= 0 && w.index[j].seq == seg.Seq {
		start = w.index[j].off &^ (blockSize - 1)
	}
	w.mu.Unlock()
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
	for {
		rec, err := r.Next()
		if err == nil {
			buf.Reset()
			_, err = buf.ReadFrom(rec)
		}
		if err != nil {
			return &CorruptError{File: seg.Name(), Offset: start + r.Offset(), FirstTx: id, LastTx: id, Reason: "reading a committed transaction: " + err.Error()}
		}
		p := buf.Bytes()
		if len(p) == 0 || p[0] != typeBatch {
			continue // the segment header
		}
		first, last, err := w.opts.Span(p[1:])
		if err != nil {
			return &CorruptError{File: seg.Name(), Offset: start + r.Offset(), FirstTx: id, LastTx: id, Reason: err.Error()}
		}
		if first > id {
			return ErrNotFound
		}
		if last >= id {
			return fn(p[1:])
		}
	}
}
