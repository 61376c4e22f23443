package wal

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// resident counts the pages of the file at p in the page cache (mincore).
func resident(t *testing.T, p string) int {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// dropPages empties the page cache of a file's clean pages; allocate makes
// a file of the size with every block allocated and nothing written.
func TestAllocateAndDropPages(t *testing.T) {
	p := filepath.Join(t.TempDir(), "seg")
	f, err := vfs.Default.Create(p, vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	ok, err := allocate(f, 1<<20)
	require.NoError(t, err)
	if !ok {
		t.Skip("the test directory's filesystem has no fallocate")
	}
	_, err = f.WriteAt(make([]byte, 256<<10), 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
	require.True(t, writtenOut(vfs.Default, p, 1<<20), "every block allocated")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, make([]byte, 1<<20), b)
	require.Positive(t, resident(t, p), "read: cached")

	f, err = vfs.Default.Open(p)
	require.NoError(t, err)
	require.True(t, dropPages(f))
	require.NoError(t, f.Close())
	require.Zero(t, resident(t, p), "dropped")

	mem, err := vfs.NewMem().Create("x", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	ok, err = allocate(mem, 1<<20)
	require.NoError(t, err)
	require.False(t, ok, "no descriptor: the caller writes zeros")
	require.False(t, dropPages(mem))
	require.NoError(t, mem.Close())
}
