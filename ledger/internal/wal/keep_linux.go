package wal

import (
	"errors"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// allocate allocates size bytes of f (fallocate, mode 0: unwritten
// extents; the size changes, the bytes read as zeros). A write into such a
// block costs its conversion at the next fdatasync, not a write of zeros
// up front (docs/ledger.md, "WAL references instead of copied blocks"). It
// reports false where it cannot: a file without a descriptor (not the OS's
// filesystem) or a filesystem without fallocate.
func allocate(f vfs.File, size int64) (bool, error) {
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return false, nil
	}
	err := unix.Fallocate(int(fd), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return false, nil
	}
	return err == nil, err
}

// dropPages drops f's clean pages from the page cache
// (POSIX_FADV_DONTNEED) and reports whether it could.
func dropPages(f vfs.File) bool {
	fd := f.Fd()
	return fd != vfs.InvalidFd && unix.Fadvise(int(fd), 0, 0, unix.FADV_DONTNEED) == nil
}
