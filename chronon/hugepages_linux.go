//go:build linux

package chronon

import "syscall"

// collapseHuge asks the kernel to back each 2 MiB page of [lo, hi) with a
// transparent huge page now: madvise MADV_COLLAPSE (Linux 6.1 and later),
// one page at a time, so that a page the kernel refuses (not anonymous
// memory, THP off, an older kernel) leaves the others alone. It is only a
// hint: errors are ignored, and the contents do not change.
func collapseHuge(lo, hi uintptr) {
	const madvCollapse = 25
	for p := lo &^ (hugePage - 1); p < hi; p += hugePage {
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, p, hugePage, madvCollapse)
	}
}
