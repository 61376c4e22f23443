//go:build unix

package frontier

import "syscall"

// cpuNanos returns the CPU time the process has used, user and system. The
// benchmarks report it per operation beside the wall-clock ns/op: on a
// machine shared with other jobs it tells time spent from time waited.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
