//go:build !amd64

package chronon

// prefetchLines does nothing where there is no prefetch routine.
func prefetchLines(lines []uintptr) {}
