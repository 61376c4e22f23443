//go:build linux

package chronon

import (
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestPrefetchLinesStaysInItsList runs the prefetch routine on lists of
// every length around its unrolling, each ending at a page whose successor
// is unreadable: a routine that read one address past its list would fault.
// The addresses it prefetches may be anything; a prefetch never faults.
func TestPrefetchLinesStaysInItsList(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	defer func() { require.NoError(t, syscall.Munmap(mem)) }()
	require.NoError(t, syscall.Mprotect(mem[page:], syscall.PROT_NONE))
	const word = int(unsafe.Sizeof(uintptr(0)))
	for n := range 11 {
		end := unsafe.Pointer(&mem[page-1]) // the list's last byte: the page's
		lines := unsafe.Slice((*uintptr)(unsafe.Add(end, 1-n*word)), n)
		for i := range lines {
			lines[i] = uintptr(unsafe.Pointer(&mem[0])) + uintptr(i*64)
		}
		prefetchLines(lines)
	}
}
