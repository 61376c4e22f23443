//go:build !linux

package chronon

// collapseHuge is a no-op outside Linux (see hugepages_linux.go).
func collapseHuge(lo, hi uintptr) {}
