//go:build unix

package ledger

import "syscall"

// cpuNanos is the process's CPU time (user + system) so far, for
// benchmarks to report CPU per op: under load it varies far less than
// wall-clock time.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
