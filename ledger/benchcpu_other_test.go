//go:build !unix

package ledger

// cpuNanos is not measured here: benchmarks report cpu-ns/op as 0.
func cpuNanos() int64 { return 0 }
