package ledger

import (
	"runtime"
	"time"
)

// backoff paces a goroutine that waits for room in a full ring (back
// pressure). A full ring holds far more work than one sleep lasts, so after a
// few yields it sleeps instead: a storm of runtime.Gosched calls would take
// CPU, and the global run-queue lock, from the stages that drain the ring.
type backoff struct{ n int }

const (
	backoffYields = 8
	backoffSleep  = 50 * time.Microsecond
)

func (b *backoff) wait() {
	b.n++
	if b.n <= backoffYields {
		runtime.Gosched()
		return
	}
	time.Sleep(backoffSleep)
}
