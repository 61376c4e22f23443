//go:build linux

package ledger

import (
	"syscall"
	"unsafe"
)

// adviseHuge asks the kernel to back the 2 MiB-aligned part of the n bytes
// at p with transparent huge pages (madvise MADV_HUGEPAGE; a no-op where
// THP is off). The Transactor's tables are read at random; with 4 KiB pages
// nearly every lookup of a large ledger also misses the TLB.
func adviseHuge(p unsafe.Pointer, n uintptr) {
	const huge = 2 << 20
	lo := (uintptr(p) + huge - 1) &^ (huge - 1)
	hi := (uintptr(p) + n) &^ (huge - 1)
	if hi <= lo {
		return
	}
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, 14) // MADV_HUGEPAGE
}
