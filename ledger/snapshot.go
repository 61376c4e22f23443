package ledger

import (
	"context"
)

// Snapshot makes the Snapshotter write a snapshot now, without waiting for
// the next SnapshotEvery boundary, and returns once it is durable (its
// manifest synced), with the id of the last transaction it covers. The
// snapshot covers at least every transaction that was Committed when
// Snapshot was called; if a durable snapshot already does (nothing was
// committed since the last one), Snapshot returns its id at once without
// writing another. On a ledger that holds no transaction it returns 0.
//
// Snapshot works also when periodic snapshots are disabled
// (SnapshotEvery < 0); like a periodic one, a requested snapshot prunes
// older snapshots and the WAL below it minus WALRetention. Concurrent calls
// share snapshots: each is released by the first durable snapshot that
// covers what it asked for. If a snapshot is being written when the
// request arrives, the request is served by the next one.
//
// Waiting is event-driven: the persister releases the call when the
// snapshot's manifest is synced. If ctx ends first, Snapshot returns its
// error (the snapshot may still be written). It returns ErrClosed after
// Close, and an error wrapping ErrFailed if the pipeline stopped on a
// storage error (including one writing this snapshot).
func (l *Ledger) Snapshot(ctx context.Context) (TxID, error) {
	if err := l.refused(l.state.Load()); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	want := l.committed.Load()
	if p := l.persisted.Load(); p >= want {
		return TxID(p), nil
	}
	w := &idWaiter{id: TxID(want), done: make(chan struct{})}
	l.snapWaits.add(w)
	// Publish the request after the waiter is queued, then wake the
	// Snapshotter (it may be parked). The persister stores persisted
	// before it releases, so re-checking after add cannot miss a release.
	for {
		cur := l.snapWant.Load()
		if cur >= want || l.snapWant.CompareAndSwap(cur, want) {
			break
		}
	}
	l.snapStage.Wake()
	if p := l.persisted.Load(); p >= want {
		l.snapWaits.remove(w)
		return TxID(p), nil
	}
	select {
	case <-w.done:
		return TxID(l.persisted.Load()), nil
	case <-ctx.Done():
		l.snapWaits.remove(w)
		return 0, ctx.Err()
	case <-l.stopped:
		l.snapWaits.remove(w)
		if p := l.persisted.Load(); p >= want {
			return TxID(p), nil
		}
		return 0, l.stoppedErr()
	}
}
