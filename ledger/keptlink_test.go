package ledger

import (
	"errors"
	"io"
	iofs "io/fs"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Until the kept segments' links land (branch walkeep: every segment
// hard-linked as index/wal/<name> before a batch is written to it, and a
// linked segment never recycled), the tests emulate them in the
// filesystem: a segment renamed into wal/ of a directory with an index/
// is linked there too, and a linked segment retired for recycling is
// copied out instead (its inode keeps the index's history).
type keptLinkFS struct{ vfs.FS }

func installKeptLinks() {
	testFS = func(fs vfs.FS) vfs.FS {
		if _, ok := fs.(keptLinkFS); ok {
			return fs
		}
		return keptLinkFS{fs}
	}
}

func isSegmentName(n string) bool {
	return len(n) == 16+1+16+4 && strings.HasSuffix(n, ".wal") && n[16] == '-'
}

func (fs keptLinkFS) Rename(oldname, newname string) error {
	dir, name := filepath.Split(newname)
	dir = filepath.Clean(dir)
	if filepath.Base(dir) != walDir {
		return fs.FS.Rename(oldname, newname)
	}
	kept := filepath.Join(filepath.Dir(dir), indexDir, walDir)
	if name == "recycle.tmp" {
		if _, err := fs.Stat(filepath.Join(kept, filepath.Base(oldname))); err == nil {
			return fs.copyOut(oldname, newname)
		}
	}
	if err := fs.FS.Rename(oldname, newname); err != nil || !isSegmentName(name) {
		return err
	}
	if _, err := fs.Stat(filepath.Join(filepath.Dir(dir), indexDir)); err != nil {
		return nil
	}
	return fs.link(newname, kept, name)
}

// link links segment file name in kept, and syncs kept.
func (fs keptLinkFS) link(file, kept, name string) error {
	if err := fs.MkdirAll(kept, 0o755); err != nil {
		return err
	}
	link := filepath.Join(kept, name)
	err := fs.Link(file, link)
	if errors.Is(err, iofs.ErrExist) {
		if err = fs.Remove(link); err == nil {
			err = fs.Link(file, link)
		}
	}
	if err != nil {
		return err
	}
	for _, d := range []string{filepath.Dir(kept), kept} {
		f, err := fs.OpenDir(d)
		if err != nil {
			return err
		}
		err = errors.Join(f.Sync(), f.Close())
		if err != nil {
			return err
		}
	}
	return nil
}

// Open links a kept segment missing from index/wal/ that wal/ has (as
// walkeep's Open does for every live one).
func (fs keptLinkFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	dir, base := filepath.Split(name)
	dir = filepath.Clean(dir)
	if isSegmentName(base) && filepath.Base(dir) == walDir && filepath.Base(filepath.Dir(dir)) == indexDir {
		if _, err := fs.Stat(name); err != nil {
			live := filepath.Join(filepath.Dir(filepath.Dir(dir)), walDir, base)
			if _, err := fs.Stat(live); err == nil {
				if err := fs.link(live, dir, base); err != nil {
					return nil, err
				}
			}
		}
	}
	return fs.FS.Open(name, opts...)
}

func (fs keptLinkFS) copyOut(oldname, newname string) error {
	src, err := fs.Open(oldname)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := fs.Create(newname, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, io.NewSectionReader(src, 0, 1<<62))
	err = errors.Join(err, dst.Sync(), dst.Close())
	if err != nil {
		return err
	}
	return fs.Remove(oldname)
}
