package chronon

// prefetchLines asks the CPU to fetch each line into its caches (PREFETCHT0,
// which neither faults nor waits).
//
//go:noescape
func prefetchLines(lines []uintptr)
