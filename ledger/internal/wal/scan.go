package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"

	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// CorruptError names damage Scan refuses: the file (a segment's name, or
// the log directory), the offset in it, and the transactions affected
// (LastTx 0: through the end of the log).
type CorruptError struct {
	File            string
	Offset          int64
	FirstTx, LastTx uint64
	Reason          string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("wal: %s at offset %d (tx %d..%d): %s", e.File, e.Offset, e.FirstTx, e.LastTx, e.Reason)
}

// Torn describes how the newest segment ended when it has no EOF trailer
// (it was not closed: a crash): its records end at Offset, and nothing
// after Offset is a record or was synced. Dropped counts the bytes of this
// segment's chunks after Offset, the remains of a write a crash cut short
// (0 if the crash came between writes, or the damage left no chunk header
// of this segment); what follows them is zeros, or a recycled file's
// earlier segment, whose chunks carry another log number.
type Torn struct {
	File     string
	Offset   int64
	Dropped  int64
	LastKept uint64 // last transaction kept (0: none)
}

// Result is what Scan found.
type Result struct {
	Segments []Segment // live segments, oldest first
	First    uint64    // first transaction the log can hold (the oldest segment's First); 0 without segments
	Last     uint64    // last transaction in the log (First-1 if it holds none)
	Torn     *Torn     // a torn tail dropped, if any
	// Unborn is a newest segment whose header never became durable (a crash
	// while it was created): it holds nothing and is not in Segments. Open
	// removes it before creating the next segment.
	Unborn string
}

// Visit is called by Scan for each batch, with the segment, the record's
// offset and the batch payload (valid only during the call).
type Visit func(seg Segment, off int64, batch []byte) error

// Bounds are the sequence numbers of the oldest and newest segment the
// caller recorded (Options.Created and Options.Oldest; 0 if unknown): a
// log starting after Oldest or ending before Newest lost segments.
type Bounds struct{ Oldest, Newest uint64 }

// Scan checks the log in opts.Dir by the package's recovery rules and calls
// fn for every batch holding a transaction at or after from, in id order.
// A segment whose successor starts at or below from is checked by its
// header and size only; from 0 reads everything. Scan changes nothing.
func Scan(opts Options, bounds Bounds, from uint64, fn Visit) (Result, error) {
	segs, unknown, err := List(opts.FS, opts.Dir)
	if err != nil {
		return Result{}, err
	}
	if len(unknown) > 0 {
		return Result{}, &CorruptError{File: unknown[0], Reason: fmt.Sprintf("unexpected file in the log directory (%d in all)", len(unknown))}
	}
	for i := 1; i < len(segs); i++ {
		if segs[i].Seq != segs[i-1].Seq+1 {
			return Result{}, &CorruptError{File: segs[i].Name(), FirstTx: segs[i-1].First, LastTx: segs[i].First - 1,
				Reason: fmt.Sprintf("segment %d follows segment %d: segments missing", segs[i].Seq, segs[i-1].Seq)}
		}
		if segs[i].First < segs[i-1].First {
			return Result{}, &CorruptError{File: segs[i].Name(), FirstTx: segs[i].First,
				Reason: fmt.Sprintf("segment starts at tx %d, before its predecessor's first tx %d", segs[i].First, segs[i-1].First)}
		}
	}
	if bounds.Oldest != 0 && len(segs) > 0 && segs[0].Seq > bounds.Oldest {
		return Result{}, &CorruptError{File: segs[0].Name(), LastTx: segs[0].First - 1,
			Reason: fmt.Sprintf("the oldest segment kept is %d, the oldest found %d: oldest segments missing", bounds.Oldest, segs[0].Seq)}
	}
	var res Result
	var buf bytes.Buffer
	for i, seg := range segs {
		newest := i == len(segs)-1
		var succ uint64 // first tx of the successor; 0 for the newest
		if !newest {
			succ = segs[i+1].First
		}
		if i == 0 {
			res.First, res.Last = seg.First, seg.First-1
		}
		skip := !newest && from != 0 && succ <= from
		sr := segReader{opts: opts, oldest: segs[0].Seq, seg: seg, newest: newest, succ: succ, skip: skip, from: from, fn: fn, buf: &buf}
		unborn, err := sr.read(&res)
		if err != nil {
			return Result{}, err
		}
		if unborn {
			res.Unborn = seg.Name()
			break
		}
		res.Segments = append(res.Segments, seg)
	}
	if n := len(segs); bounds.Newest != 0 && (n == 0 || segs[n-1].Seq < bounds.Newest) {
		name, first := "", uint64(0)
		if n > 0 {
			name, first = segs[n-1].Name(), res.Last+1
		}
		return Result{}, &CorruptError{File: name, FirstTx: first,
			Reason: fmt.Sprintf("the ledger created segment %d, the newest found is %d: newest segments missing", bounds.Newest, lastSeq(segs))}
	}
	return res, nil
}

// CheckSegment checks one segment of opts.Dir as Scan checks it (header,
// size, every record's chunks, contiguous batches through opts.Span), given
// the first tx of its successor (0: it is the newest), and calls fn for
// every batch. The ledger's verify checks kept segments one by one with
// it, so that damage in one does not hide the others.
func CheckSegment(opts Options, seg Segment, succ uint64, fn Visit) error {
	res := Result{First: seg.First, Last: seg.First - 1}
	var buf bytes.Buffer
	sr := segReader{opts: opts, oldest: seg.Seq, seg: seg, newest: succ == 0, succ: succ, fn: fn, buf: &buf}
	_, err := sr.read(&res)
	return err
}

func lastSeq(segs []Segment) uint64 {
	if len(segs) == 0 {
		return 0
	}
	return segs[len(segs)-1].Seq
}

type segReader struct {
	opts   Options
	oldest uint64 // sequence number of the oldest live segment
	seg    Segment
	newest bool
	succ   uint64
	skip   bool
	from   uint64
	fn     Visit
	buf    *bytes.Buffer
}

func (s *segReader) corrupt(off int64, first, last uint64, format string, args ...any) error {
	return &CorruptError{File: s.seg.Name(), Offset: off, FirstTx: first, LastTx: last, Reason: fmt.Sprintf(format, args...)}
}

// read checks one segment and advances res.Last through its batches.
func (s *segReader) read(res *Result) (unborn bool, err error) {
	path := s.opts.FS.PathJoin(s.opts.Dir, s.seg.Name())
	f, err := s.opts.FS.Open(path)
	if err != nil {
		return false, fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("wal: %w", err)
	}
	size := st.Size()
	last := s.succ - 1 // the last tx this segment must hold; unknown for the newest
	if s.newest {
		last = 0
	}
	r := newReader(f, s.seg.Seq)
	rec, err := r.Next()
	if err == nil {
		s.buf.Reset()
		_, err = s.buf.ReadFrom(rec)
	}
	if err != nil {
		if s.newest && errors.Is(err, record.ErrUnexpectedEOF) {
			// Unborn: not one chunk of this segment was written, and the
			// file holds zeros or, recycled, a retired segment.
			unborn, uerr := s.unborn(f, size)
			if uerr != nil {
				return false, uerr
			}
			if unborn && res.Last+1 == s.seg.First {
				return true, nil
			}
		}
		if !isRecordErr(err) {
			return false, fmt.Errorf("wal: read %s: %w", s.seg.Name(), err)
		}
		return false, s.corrupt(0, s.seg.First, last, "segment header unreadable: %v", err)
	}
	hseg, hsize, err := decodeHeader(s.buf.Bytes())
	switch {
	case err != nil:
		return false, s.corrupt(0, s.seg.First, last, "%v", err)
	case hseg != s.seg:
		return false, s.corrupt(0, s.seg.First, last, "header names segment %d starting at tx %d", hseg.Seq, hseg.First)
	case hsize != size:
		return false, s.corrupt(size, s.seg.First, last, "segment is %d bytes, its header says %d", size, hsize)
	case s.seg.First != res.Last+1:
		return false, s.corrupt(0, res.Last+1, s.seg.First-1, "segment starts at tx %d, the log before it ends at tx %d", s.seg.First, res.Last)
	}
	if s.skip {
		res.Last = s.succ - 1
		return false, nil
	}
	for {
		off := r.Offset()
		rec, err := r.Next()
		if err == nil {
			s.buf.Reset()
			_, err = s.buf.ReadFrom(rec)
		}
		if err != nil {
			return false, s.end(f, size, off, err, res)
		}
		p := s.buf.Bytes()
		if len(p) == 0 || p[0] != typeBatch {
			return false, s.corrupt(off, res.Last+1, last, "record is not a batch")
		}
		first, blast, err := s.opts.Span(p[1:])
		if err != nil {
			return false, s.corrupt(off, res.Last+1, last, "%v", err)
		}
		if first != res.Last+1 {
			return false, s.corrupt(off, res.Last+1, max(first, blast), "batch holds txs %d..%d, want %d next", first, blast, res.Last+1)
		}
		if !s.newest && blast > last {
			return false, s.corrupt(off, first, blast, "batch holds txs %d..%d, past the successor's first tx %d", first, blast, s.succ)
		}
		res.Last = blast
		if blast >= s.from {
			if err := s.fn(s.seg, off, p[1:]); err != nil {
				return false, err
			}
		}
	}
}

// unborn reports whether the newest segment, whose first record failed to
// read, was never written: no chunk of its own, and all zeros (prepared) or
// a retired segment's header first (recycled). Anything else there is
// damage.
func (s *segReader) unborn(f vfs.File, size int64) (bool, error) {
	if end, err := ownChunksEnd(f, s.seg.Seq, 0, size); err != nil || end != 0 {
		return false, err
	}
	if retired, err := retiredHeader(f, s.oldest); err != nil || retired {
		return retired, err
	}
	return allZero(f, size)
}

// end classifies how the segment's records ended: at off, with err.
func (s *segReader) end(f vfs.File, size, off int64, err error, res *Result) error {
	if err != io.EOF && !isRecordErr(err) {
		return fmt.Errorf("wal: read %s: %w", s.seg.Name(), err)
	}
	if err != io.EOF && s.newest {
		// Not closed. A torn tail only if nothing after off was synced.
		later, at, lerr := laterSynced(f, s.seg.Seq, off, size)
		if lerr != nil {
			return lerr
		}
		if later || !errors.Is(err, record.ErrUnexpectedEOF) {
			return s.corrupt(off, res.Last+1, 0, "damaged record with valid synced records after it (at offset %d): %v", at, err)
		}
		end, oerr := ownChunksEnd(f, s.seg.Seq, off, size)
		if oerr != nil {
			return oerr
		}
		res.Torn = &Torn{File: s.seg.Name(), Offset: off, Dropped: end - off, LastKept: res.Last}
		return nil
	}
	// An older segment ends where its successor starts, whether it was
	// closed (EOF trailer) or a crash ended it before the successor was
	// created (then a later Open started the successor after the last
	// record kept). Damage that cost records shows as missing ids.
	if !s.newest && res.Last != s.succ-1 {
		return s.corrupt(off, res.Last+1, s.succ-1, "segment ends at tx %d, its successor starts at tx %d: %v", res.Last, s.succ, err)
	}
	return nil
}

func isRecordErr(err error) bool {
	return errors.Is(err, record.ErrUnexpectedEOF) || errors.Is(err, record.ErrZeroedChunk) || errors.Is(err, record.ErrInvalidChunk) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

func isNotExist(err error) bool { return errors.Is(err, iofs.ErrNotExist) }

// allZero reports whether f's first size bytes are all zero.
func allZero(f vfs.File, size int64) (bool, error) {
	buf := make([]byte, blockSize)
	for off := int64(0); off < size; off += blockSize {
		b := buf[:min(blockSize, size-off)]
		if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
			return false, fmt.Errorf("wal: %w", err)
		}
		if !bytes.Equal(b, zeroBlock[:len(b)]) {
			return false, nil
		}
	}
	return true, nil
}
