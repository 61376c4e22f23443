package server

import (
	"sync"
	"time"
)

// workers runs the server's waiting requests on reused goroutines: a
// goroutine keeps its grown stack between requests, so a steady stream of
// submit-and-wait requests creates none. Workers beyond the load exit
// after idleWorker without work.
type workers struct {
	work chan func() // unbuffered: a send succeeds only into an idle worker
	quit chan struct{}
	wg   sync.WaitGroup
}

const idleWorker = 10 * time.Second

func newWorkers() *workers {
	return &workers{work: make(chan func()), quit: make(chan struct{})}
}

// run executes f on an idle worker, or on a new one.
func (w *workers) run(f func()) {
	select {
	case w.work <- f:
	default:
		w.wg.Add(1)
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	defer w.wg.Done()
	t := time.NewTimer(idleWorker)
	defer t.Stop()
	for {
		f()
		t.Reset(idleWorker)
		select {
		case f = <-w.work:
		case <-t.C:
			return
		case <-w.quit:
			return
		}
	}
}

// stop makes idle workers exit and waits for all of them; no run may be
// called after (or during) stop.
func (w *workers) stop() {
	close(w.quit)
	w.wg.Wait()
}
