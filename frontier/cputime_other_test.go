//go:build !unix

package frontier

// cpuNanos is unavailable here; the cpu-ns/op metric then reads 0.
func cpuNanos() int64 { return 0 }
