package ledger

import (
	"runtime"
	"time"
)

// backoff paces a goroutine that waits for room in a full ring (back
// pressure). A full ring holds far more work than one sleep lasts, so after a
// few yields it sleeps instead: a storm of runtime.Gosched calls would take
// CPU, and the global run-queue lock, from the stages that drain the ring.
//
// yields raises the yields before the first sleep: a wait that is short
// and whose other side runs on its own core (Open's replay) yields longer.
type backoff struct{ n, yields int }

const (
	backoffYields = 8
	backoffSleep  = 50 * time.Microsecond
)

func (b *backoff) wait() {
	b.n++
	if b.n <= backoffYields+b.yields {
		runtime.Gosched()
		return
	}
	time.Sleep(backoffSleep)
}
