package wal

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Kept segments. With Options.Keep set, every new segment is also a hard
// link in that directory, made (and the directory synced) before any batch
// is written to it: the log's own directory and its rules are unchanged
// (retention unlinks the log's name), and the inode lives on under the
// kept name for whoever refers to it (the ledger's index). A file with
// another link is never recycled, since its bytes are someone's history;
// so a Writer that keeps prepares its successors by allocating them
// (fallocate on Linux, zeros elsewhere) rather than from retired segments,
// and drops each closed segment's pages from the page cache (its reads are
// rare and kept segments would otherwise fill the cache).

// ConflictError is a kept name that is another file than the log's
// segment of that name: never replaced silently, since either may hold
// history the other lacks.
type ConflictError struct {
	Kept, Live string // paths
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("wal: %s is not the same file as %s", e.Kept, e.Live)
}

// LinkKept links every segment of segs (files in dir) into keep under its
// own name, unless it is there already, and syncs keep if it linked any.
// A name in keep that is another file is a *ConflictError. It returns how
// many it linked.
func LinkKept(fs vfs.FS, dir, keep string, segs []Segment) (int, error) {
	if err := mkdirSynced(fs, keep); err != nil {
		return 0, fmt.Errorf("wal: %w", err)
	}
	n := 0
	for _, s := range segs {
		linked, err := linkKept(fs, fs.PathJoin(dir, s.Name()), fs.PathJoin(keep, s.Name()))
		if err != nil {
			return n, err
		}
		if linked {
			n++
		}
	}
	if n > 0 {
		if err := syncDir(fs, keep); err != nil {
			return n, err
		}
	}
	return n, nil
}

// PruneKept removes from keep every file that is not one of live (the
// log's live segments), and syncs keep if it removed any. It returns how
// many it removed.
func PruneKept(fs vfs.FS, keep string, live []Segment) (int, error) {
	names, err := fs.List(keep)
	if errors.Is(err, iofs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("wal: %w", err)
	}
	n := 0
	for _, name := range names {
		if slices.ContainsFunc(live, func(s Segment) bool { return s.Name() == name }) {
			continue
		}
		if err := fs.Remove(fs.PathJoin(keep, name)); err != nil && !isNotExist(err) {
			return n, fmt.Errorf("wal: remove kept %s: %w", name, err)
		}
		n++
	}
	if n > 0 {
		if err := syncDir(fs, keep); err != nil {
			return n, err
		}
	}
	return n, nil
}

// linkKept links live as kept unless kept exists; an existing kept must be
// the same file (where the filesystem tells files apart).
func linkKept(fs vfs.FS, live, kept string) (bool, error) {
	err := fs.Link(live, kept)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, os.ErrExist) {
		return false, fmt.Errorf("wal: keep %s: %w", live, err)
	}
	a, err := fs.Stat(live)
	if err != nil {
		return false, fmt.Errorf("wal: keep %s: %w", live, err)
	}
	b, err := fs.Stat(kept)
	if err != nil {
		return false, fmt.Errorf("wal: keep %s: %w", live, err)
	}
	if ia, ok := fileID(a); ok {
		if ib, ok := fileID(b); ok && ia != ib {
			return false, &ConflictError{Kept: kept, Live: live}
		}
	}
	return false, nil
}

// linked reports whether the file at path has another link (a kept one):
// false where the filesystem does not say.
func linked(fs vfs.FS, path string) bool {
	fi, err := fs.Stat(path)
	if err != nil {
		return false
	}
	n, ok := linkCount(fi)
	return ok && n > 1
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	if err := errors.Join(d.Sync(), d.Close()); err != nil {
		return fmt.Errorf("wal: sync %s: %w", dir, err)
	}
	return nil
}

// keepNew links the new segment seg into Options.Keep and syncs that
// directory, before any batch is written to seg.
func (w *Writer) keepNew(seg Segment) error {
	if _, err := linkKept(w.opts.FS, w.path(seg.Name()), w.opts.FS.PathJoin(w.opts.Keep, seg.Name())); err != nil {
		return err
	}
	if err := w.keepDir.Sync(); err != nil {
		return fmt.Errorf("wal: sync %s: %w", w.opts.Keep, err)
	}
	return nil
}

// allocateSpace makes p a file of the segment size whose blocks are
// allocated but hold no bytes written (fallocate), and reports whether it
// could: Linux, a filesystem that supports it, the OS's files.
func (w *Writer) allocateSpace(p string) (bool, error) {
	f, err := w.opts.FS.Create(p, vfs.WriteCategoryUnspecified)
	if err != nil {
		return false, err
	}
	ok, err := allocate(f, w.opts.SegmentSize)
	err = errors.Join(err, f.Close())
	if ok && err == nil {
		w.allocated.Add(1)
	}
	return ok, err
}

// dropCached drops a closed segment's pages from the page cache (the
// preparer's job: off the appending goroutine). Advisory: an error is
// ignored, the pages then only stay cached.
func (w *Writer) dropCached(name string) {
	f, err := w.opts.FS.Open(w.opts.FS.PathJoin(w.opts.Keep, name))
	if err != nil {
		return
	}
	if dropPages(f) {
		w.dropped.Add(1)
	}
	f.Close()
}

// Allocated returns how many segments this Writer prepared by allocating
// them (fallocate) instead of writing zeros.
func (w *Writer) Allocated() uint64 { return w.allocated.Load() }

// Dropped returns how many closed segments this Writer dropped from the
// page cache.
func (w *Writer) Dropped() uint64 { return w.dropped.Load() }
