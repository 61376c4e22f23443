package wal

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configure a Writer and Scan.
type Options struct {
	FS  vfs.FS
	Dir string // the log directory
	// SegmentSize is the size of every new segment; at least
	// MinSegmentSize. A segment a Scan reads keeps the size its header names.
	SegmentSize int64
	// Span verifies a batch payload (after its type byte) and returns its
	// first and last transaction id.
	Span func(batch []byte) (first, last uint64, err error)
	// Created, if set, is called once a new segment is durable and before
	// any batch is written to it (the ledger records the newest segment's
	// sequence number, so that a deleted newest segment is noticed).
	Created func(Segment) error
	// Oldest, if set, is called with the segment that becomes the oldest:
	// the first segment of a new log, once durable, and the first one
	// RemoveBelow keeps, before it removes any file.
	Oldest func(Segment) error
	// Keep, if set, is a directory where every new segment is hard-linked
	// under its own name before any batch is written to it (keep.go).
	Keep string
	// FirstSeq is the sequence number of a new log's first segment (1 if
	// 0): a log that replaces another continues its numbers, so that no
	// name is used twice.
	FirstSeq uint64
}

// Writer appends batches to the newest segment. Append, Close and the
// rollover they trigger belong to one goroutine; Segments, Find and
// RemoveBelow may be called from others.
type Writer struct {
	opts Options
	dir  vfs.File // the log directory, for syncs

	mu    sync.Mutex
	segs  []Segment    // live segments, oldest first; the last is the current one
	index []blockEntry // sparse: the first batch starting in each block written since Create
	next  uint64       // id the next batch starts with (written under mu, read by Find)

	// The current segment; the appending goroutine only.
	cur     Segment
	f       vfs.File
	lw      *record.LogWriter
	size    int64 // its size
	wg      sync.WaitGroup
	syncErr error
	scratch []byte
	// lastStart is the file offset of the last batch record (LastRecord).
	lastStart int64

	// fsyncLatency observes every segment sync (see newLogWriter).
	fsyncLatency prometheus.Histogram
	// recycled counts the segments prepared from a retired one.
	recycled atomic.Uint64
	// With Options.Keep: the kept directory, for syncs; allocated counts
	// the segments prepared by fallocate, dropped the closed segments
	// dropped from the page cache, whose names drop hands the preparer.
	keepDir   vfs.File
	allocated atomic.Uint64
	dropped   atomic.Uint64
	drop      chan string

	// The preparer prepares prepare.tmp ahead of the next rollover.
	prepReq  chan struct{}
	prepDone chan error
	prepBusy bool // a request is out (appending goroutine only)
	// sparse: the current segment is the sparse one Create opened, whose
	// syncs allocate blocks; Append leaves it for a written-out segment as
	// soon as the preparer has one (appending goroutine only).
	sparse bool
	quit   chan struct{}
	prepWG sync.WaitGroup

	// Recycling: RemoveBelow renames the newest segment it retires to
	// recycle.tmp, if it is written out at the segment size (this Writer
	// prepared it: seq above sparseSeq, the sparse segment Create opened;
	// or the filesystem says so, for an earlier process's) and no spare
	// waits, and the preparer renames the spare to prepare.tmp instead of
	// writing zeros. spare says recycle.tmp exists; spareMu covers it and
	// both renames.
	sparseSeq uint64
	spareMu   sync.Mutex
	spare     bool
}

// blockEntry locates the first batch that starts in one 32 KiB block.
type blockEntry struct {
	first uint64 // its first transaction id
	seq   uint64
	off   int64 // the record's offset in the segment
}

// Create starts a new segment after segs (the live segments a Scan
// returned, oldest first; none for a new log) whose first transaction is
// first, and returns a Writer appending to it.
func Create(opts Options, segs []Segment, first uint64) (*Writer, error) {
	if opts.SegmentSize < MinSegmentSize {
		return nil, fmt.Errorf("wal: segment size %d below %d", opts.SegmentSize, MinSegmentSize)
	}
	if err := mkdirSynced(opts.FS, opts.Dir); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	dir, err := opts.FS.OpenDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	w := &Writer{
		opts: opts, dir: dir, segs: append([]Segment(nil), segs...), next: first,
		prepReq: make(chan struct{}, 1), prepDone: make(chan error, 1), quit: make(chan struct{}), drop: make(chan string, 4),
		fsyncLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "wal_fsync_seconds", Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16),
		}),
	}
	seq := max(opts.FirstSeq, 1)
	if len(segs) > 0 {
		seq = segs[len(segs)-1].Seq + 1
	}
	w.sparseSeq = seq
	// A spare an earlier process left is removed, not checked: the next
	// retirement provides another.
	err = opts.FS.Remove(w.path(recycleTmp))
	if isNotExist(err) {
		err = nil
	}
	if err == nil && opts.Keep != "" {
		if err = mkdirSynced(opts.FS, opts.Keep); err == nil {
			w.keepDir, err = opts.FS.OpenDir(opts.Keep)
		}
		if err != nil {
			err = fmt.Errorf("wal: %w", err)
		}
	}
	if err == nil {
		err = w.prepare(false)
	}
	if err == nil {
		err = w.open(Segment{Seq: seq, First: first})
	}
	if err != nil {
		if w.lw != nil {
			w.lw.Close()
		}
		if w.keepDir != nil {
			w.keepDir.Close()
		}
		dir.Close()
		return nil, err
	}
	// Start the written-out successor at once: every sync into the sparse
	// segment allocates blocks, a journal commit each on ext4, which put
	// the Committed P99 at 100k tx/s at 2-3x that of a written-out segment
	// (docs/ledger.md, "The first segment after Open").
	w.sparse, w.prepBusy = true, true
	w.prepReq <- struct{}{}
	w.prepWG.Add(1)
	go w.runPreparer()
	return w, nil
}

func (w *Writer) path(name string) string { return w.opts.FS.PathJoin(w.opts.Dir, name) }

// prepare makes prepare.tmp, a file of SegmentSize bytes. Full, it is
// written out, so that writes into it later change data only, never the
// file's size or its allocation, and fdatasync has no metadata to flush;
// that is the preparer's job, ahead of a rollover: it recycles a retired
// segment if one waits (takeSpare); a Writer that keeps its segments
// (which it never recycles) allocates one (allocateSpace); else it writes
// zeros, with O_DIRECT on Linux where it can (zeroFillDirect), and syncs
// them. Otherwise it is
// sparse (its last byte written), which costs nothing up front and makes
// the first syncs into each block slower: the first segment after Open,
// which must not delay Open by a segment's worth of writes.
func (w *Writer) prepare(full bool) error {
	p := w.path(prepareTmp)
	if full {
		if ok, err := w.takeSpare(p); ok || err != nil {
			return err
		}
		if w.opts.Keep != "" {
			if done, err := w.allocateSpace(p); err != nil {
				return fmt.Errorf("wal: prepare segment: %w", err)
			} else if done {
				return w.syncPrepared(p)
			}
		}
		if done, err := zeroFillDirect(w.opts.FS, p, w.opts.SegmentSize); err != nil {
			return fmt.Errorf("wal: prepare segment: %w", err)
		} else if done {
			return w.syncPrepared(p)
		}
	}
	f, err := w.opts.FS.Create(p, vfs.WriteCategoryUnspecified)
	if err == nil && full {
		zero := make([]byte, 1<<20)
		for off := int64(0); off < w.opts.SegmentSize && err == nil; off += int64(len(zero)) {
			_, err = f.Write(zero[:min(int64(len(zero)), w.opts.SegmentSize-off)])
		}
	}
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil && !full {
		if f, err = w.opts.FS.OpenReadWrite(p, vfs.WriteCategoryUnspecified); err == nil {
			_, err = f.WriteAt([]byte{0}, w.opts.SegmentSize-1)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		return fmt.Errorf("wal: prepare segment: %w", err)
	}
	return w.syncPrepared(p)
}

// takeSpare renames recycle.tmp, a retired segment written out at the
// segment size (see retire's caller), to p and reports whether it did.
// Writes into it change data only, as into zeros; its old records carry an
// earlier segment's log number, which pebble's reader and Scan tell from
// this segment's (see Torn). Its data was synced when it was written; open
// syncs the directory after the next rename.
func (w *Writer) takeSpare(p string) (bool, error) {
	w.spareMu.Lock()
	defer w.spareMu.Unlock()
	if !w.spare {
		return false, nil
	}
	w.spare = false
	if err := w.opts.FS.Rename(w.path(recycleTmp), p); err != nil {
		return false, fmt.Errorf("wal: recycle segment: %w", err)
	}
	w.recycled.Add(1)
	return true, nil
}

// retire removes seg's file or, if recycle is set and no spare waits, keeps
// it as the spare.
func (w *Writer) retire(seg Segment, recycle bool) error {
	if recycle {
		w.spareMu.Lock()
		defer w.spareMu.Unlock()
		if !w.spare {
			if err := w.opts.FS.Rename(w.path(seg.Name()), w.path(recycleTmp)); err != nil {
				return fmt.Errorf("wal: retire %s: %w", seg.Name(), err)
			}
			w.spare = true
			return nil
		}
	}
	if err := w.opts.FS.Remove(w.path(seg.Name())); err != nil && !isNotExist(err) {
		return fmt.Errorf("wal: remove %s: %w", seg.Name(), err)
	}
	return nil
}

// syncPrepared syncs the prepared file p.
func (w *Writer) syncPrepared(p string) error {
	f, err := w.opts.FS.OpenReadWrite(p, vfs.WriteCategoryUnspecified)
	if err == nil {
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("wal: prepare segment: %w", err)
	}
	return nil
}

func (w *Writer) runPreparer() {
	defer w.prepWG.Done()
	for {
		select {
		case <-w.prepReq:
			w.prepDone <- w.prepare(true)
		case name := <-w.drop:
			w.dropCached(name)
		case <-w.quit:
			return
		}
	}
}

// open makes the prepared file segment seg: renamed, the directory synced,
// its header written and synced, kept (Options.Keep); then Created runs.
func (w *Writer) open(seg Segment) error {
	var f vfs.File
	err := w.opts.FS.Rename(w.path(prepareTmp), w.path(seg.Name()))
	if err == nil {
		err = w.dir.Sync()
	}
	if err == nil {
		f, err = w.opts.FS.OpenReadWrite(w.path(seg.Name()), vfs.WriteCategoryUnspecified)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return fmt.Errorf("wal: create segment %s: %w", seg.Name(), err)
	}
	w.f, w.size, w.cur = f, w.opts.SegmentSize, seg
	w.lw = newLogWriter(dataSyncer{f}, seg.Seq, w.fsyncLatency)
	w.scratch = encodeHeader(w.scratch[:0], seg, w.size)
	if err := w.syncRecord(w.scratch); err != nil {
		return fmt.Errorf("wal: create segment %s: %w", seg.Name(), err)
	}
	if w.opts.Keep != "" {
		if err := w.keepNew(seg); err != nil {
			return err
		}
	}
	if w.opts.Created != nil {
		if err := w.opts.Created(seg); err != nil {
			return err
		}
	}
	w.mu.Lock() // RemoveBelow, on another goroutine, changes segs
	first := len(w.segs) == 0
	w.mu.Unlock()
	if w.opts.Oldest != nil && first {
		if err := w.opts.Oldest(seg); err != nil {
			return err
		}
	}
	w.mu.Lock()
	w.segs = append(w.segs, seg)
	w.mu.Unlock()
	return nil
}

// dataSyncer syncs with fdatasync: segments never change size once
// prepared, so the data is all a sync must reach.
type dataSyncer struct{ vfs.File }

func (d dataSyncer) Sync() error { return d.File.SyncData() }

func (w *Writer) syncRecord(p []byte) error {
	w.wg.Add(1)
	if _, err := w.lw.SyncRecord(p, &w.wg, &w.syncErr); err != nil {
		w.wg.Done()
		return err
	}
	w.wg.Wait()
	return w.syncErr
}

// MaxBatch is the largest batch record (HeaderRoom included) a segment of
// size holds with room for its header.
func MaxBatch(size int64) int { return int(size / 4) }

// Append writes rec as one batch record holding transactions first..last
// and returns once it is synced (fdatasync). rec[0] is reserved
// (HeaderRoom). A batch that does not fit the current segment goes to a new
// one. After an error the Writer is unusable: the ledger stops.
func (w *Writer) Append(rec []byte, first, last uint64) error {
	if len(rec) > MaxBatch(w.opts.SegmentSize) {
		return fmt.Errorf("wal: %d-byte batch above %d", len(rec), MaxBatch(w.opts.SegmentSize))
	}
	if first != w.next {
		return fmt.Errorf("wal: batch starts at tx %d, want %d", first, w.next)
	}
	pos := w.lw.Size()
	if pos+recordBound(len(rec))+chunkHeader > w.size || w.leaveSparse() {
		if err := w.rollover(first); err != nil {
			return err
		}
		pos = w.lw.Size()
	} else if !w.prepBusy && pos > w.size/2 {
		w.prepBusy = true
		w.prepReq <- struct{}{}
	}
	rec[0] = typeBatch
	w.lastStart = pos // the LogWriter padded a block too short for a header: a record starts at Size
	if err := w.syncRecord(rec); err != nil {
		return fmt.Errorf("wal: append to %s: %w", w.current().Name(), err)
	}
	w.mu.Lock()
	if n := len(w.index); n == 0 || w.index[n-1].seq != w.current().Seq || w.index[n-1].off/blockSize != pos/blockSize {
		w.index = append(w.index, blockEntry{first: first, seq: w.current().Seq, off: pos})
	}
	w.next = last + 1
	w.mu.Unlock()
	return nil
}

// leaveSparse reports whether Append should roll over early: the current
// segment is the sparse one, it holds a batch already (so no segment is
// ever empty), and the preparer has finished its successor.
func (w *Writer) leaveSparse() bool {
	return w.sparse && w.next > w.cur.First && len(w.prepDone) > 0
}

// current is the segment being written.
func (w *Writer) current() Segment { return w.cur }

func (w *Writer) rollover(first uint64) error {
	old := w.current()
	if err := w.lw.Close(); err != nil { // EOF trailer, synced; closes w.f
		return fmt.Errorf("wal: close %s: %w", old.Name(), err)
	}
	if w.opts.Keep != "" {
		select { // advisory: a busy preparer may skip one
		case w.drop <- old.Name():
		default:
		}
	}
	var err error
	if w.prepBusy {
		err = <-w.prepDone
		w.prepBusy = false
	} else {
		err = w.prepare(true)
	}
	if err == nil {
		err = w.open(Segment{Seq: old.Seq + 1, First: first})
	}
	w.sparse = false
	return err
}

// Close syncs and closes the current segment (writing its EOF trailer) and
// stops the preparer. It does not remove anything but prepare.tmp and
// recycle.tmp.
func (w *Writer) Close() error {
	close(w.quit)
	w.prepWG.Wait()
	// The preparer has exited: it either answered the request out (its
	// answer is buffered) or saw quit before taking it.
	if w.prepBusy && len(w.prepDone) > 0 {
		<-w.prepDone
	}
	err := w.lw.Close()
	for _, name := range []string{prepareTmp, recycleTmp} {
		if rerr := w.opts.FS.Remove(w.path(name)); rerr != nil && !isNotExist(rerr) && err == nil {
			err = rerr
		}
	}
	if w.keepDir != nil {
		err = errors.Join(err, w.keepDir.Close())
	}
	return errors.Join(err, w.dir.Close())
}

// Segments returns the live segments, oldest first.
func (w *Writer) Segments() []Segment {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Segment(nil), w.segs...)
}

// RemoveBelow removes, oldest first, every segment whose transactions are
// all below keep (never the current one), then syncs the directory. It
// returns how many it removed. The newest of them may instead be kept as
// recycle.tmp, for the preparer to reuse as the next segment.
func (w *Writer) RemoveBelow(keep uint64) (int, error) {
	w.mu.Lock()
	n := 0
	for n+1 < len(w.segs) && w.segs[n+1].First <= keep {
		n++
	}
	if n == 0 {
		w.mu.Unlock()
		return 0, nil
	}
	if w.opts.Oldest != nil {
		if err := w.opts.Oldest(w.segs[n]); err != nil {
			w.mu.Unlock()
			return 0, err
		}
	}
	doomed := append([]Segment(nil), w.segs[:n]...)
	w.segs = append(w.segs[:0], w.segs[n:]...)
	if n > 0 {
		i := 0
		for i < len(w.index) && w.index[i].seq < w.segs[0].Seq {
			i++
		}
		w.index = append(w.index[:0], w.index[i:]...)
	}
	w.mu.Unlock()
	// Oldest first, so that a crash leaves the live segments contiguous;
	// the newest retired one may become the spare, unless it is kept (its
	// inode holds history: a Writer that keeps never recycles, nor does
	// any other a file with another link).
	for i, s := range doomed {
		p := w.path(s.Name())
		recycle := i == len(doomed)-1 && w.opts.Keep == "" &&
			(s.Seq > w.sparseSeq || writtenOut(w.opts.FS, p, w.opts.SegmentSize)) && !linked(w.opts.FS, p)
		if err := w.retire(s, recycle); err != nil {
			return 0, err
		}
	}
	if err := w.dir.Sync(); err != nil {
		return 0, fmt.Errorf("wal: sync after removing segments: %w", err)
	}
	return n, nil
}

// mkdirSynced creates dir if missing and syncs its parent, so that the
// directory itself survives a crash.
func mkdirSynced(fs vfs.FS, dir string) error {
	if _, err := fs.Stat(dir); err == nil {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	parent, err := fs.OpenDir(fs.PathDir(dir))
	if err != nil {
		return err
	}
	return errors.Join(parent.Sync(), parent.Close())
}

// Recycled returns how many segments this Writer prepared from retired
// ones instead of writing zeros.
func (w *Writer) Recycled() uint64 { return w.recycled.Load() }
