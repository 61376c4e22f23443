package wal

import (
	"errors"
	"os"
	"syscall"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// directAlign is the alignment O_DIRECT asks of buffers, offsets and
// lengths (the largest logical block size in use).
const directAlign = 4096

// zeroFillDirect writes size zero bytes to a new file at path with
// O_DIRECT: the device is handed the zeros without the kernel copying them
// into the page cache, which costs about a quarter of the CPU of buffered
// writes (docs/ledger.md), while the blocks end up written, not unwritten
// extents, as prepare needs. It reports false, having written nothing, when
// it cannot be used: another filesystem than the OS's (tests), a size not a
// multiple of the alignment, or a filesystem refusing O_DIRECT (then the
// caller's buffered writes replace whatever it wrote).
func zeroFillDirect(fs vfs.FS, path string, size int64) (bool, error) {
	if fs != vfs.Default || size%directAlign != 0 {
		return false, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|syscall.O_DIRECT, 0o644)
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EOPNOTSUPP) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	raw := make([]byte, 1<<20+directAlign)
	a := int(-uintptr(unsafe.Pointer(&raw[0])) & (directAlign - 1))
	zero := raw[a : a+1<<20]
	for off := int64(0); off < size && err == nil; off += int64(len(zero)) {
		_, err = f.Write(zero[:min(int64(len(zero)), size-off)])
	}
	cerr := f.Close()
	if errors.Is(err, syscall.EINVAL) { // opened, but O_DIRECT writes refused
		return false, nil
	}
	return true, errors.Join(err, cerr)
}

// writtenOut reports whether the file at path is size bytes with every
// block allocated: a segment a preparer wrote out, which retention may
// recycle, rather than a sparse first segment, whose holes would make
// syncs into it allocate. Only the OS's filesystem can tell.
func writtenOut(fs vfs.FS, path string, size int64) bool {
	if fs != vfs.Default {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return false
	}
	return st.Size == size && st.Blocks*512 >= size
}
