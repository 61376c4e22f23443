package ledger

import (
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lanework/lanework/ledger/internal/wal"
	"github.com/lanework/lanework/pressure"
	"github.com/lanework/lanework/ringbuf"
)

// The pipeline's invariants. Every change to the stage code keeps them;
// the comments below refer to them by number.
//
//  1. Ids. A transaction's id is base plus its ticket in the Sequencer ring
//     (seq): ids are dense, a batch's are contiguous, and every stage sees
//     the transactions in id order (each ring has one consumer and is FIFO).
//
//  2. One writer each. The Transactor alone reads and writes the working
//     cells (executor.work) and runs business logic; the Snapshotter
//     alone stores readable balances; each index has one writer (its
//     stage), but Sequenced, a CAS-max of the submitters.
//
//  3. Work, then index. A stage stores its index only after the work it
//     names is done and visible: Computed after execution, Committed after
//     the WAL record holding the transactions is fdatasync'd, Snapshot after
//     the balance stores. The indexes are sequentially consistent atomics,
//     so Snapshot <= Committed <= Computed holds at every instant, and a
//     load of an index >= id observes everything done for id.
//
//  4. Nothing acknowledged at Committed is lost. Committed advances only
//     after wal.Writer.Append returned; a failed append fails the ledger,
//     and no index moves again.
//
//  5. Entries are final. Downstream of the Transactor nobody re-runs logic:
//     the WAL encodes the records, the Snapshotter stores their resulting
//     balances, recovery replays the same entries.
//
//  6. Delivery exactly once. A waiter's result is delivered by the stage
//     that brings the transaction to its level, before that stage hands the
//     record's slot on (Transactor: before toWAL.Commit; WAL and
//     Snapshotter: before Advance), or, after a failure, by sweepFns once
//     every stage has stopped. Whoever unlinks the waiter from fns calls it.
//
//  7. Bounded memory, back pressure. Each ring is fixed; a stage whose
//     output ring is full waits for its consumer. Nothing grows with load.
//
//  8. No lost wakeup. A publisher calls Wake on its consumer after every
//     publication (submitters also before, so a parked Transactor is already
//     waking), a consumer after consuming (a blocked producer gets the CPU).
//
//  9. Drain on Close. A stage exits only when its upstream's done flag is
//     set and its input ring is empty; the upstream stores the flag after
//     its last publication, so reloading the ring after seeing the flag
//     cannot miss an item. Close sets stopping once no submit is in flight,
//     so everything sequenced becomes durable before Close returns. A
//     failure (halt) stops every stage at its next check instead.
//
// 10. Snapshots are fuzzy, and recovery knows it. The persister reads the
//     readable balances while the Snapshotter goes on applying; a snapshot
//     names the window (its id, applying) it may be ahead by, and recovery
//     replays the WAL over that window (recovery.go).

const (
	// transactorRun bounds the requests the Transactor takes per iteration.
	transactorRun = 4096
	// snapshotterRun bounds the records the Snapshotter applies per iteration.
	snapshotterRun = 4096
	// touchAhead is how many requests the Transactor touches (loads their
	// index entries and working cells) before executing them.
	touchAhead = 64
	// walMaxBytes bounds one WAL batch record (and wal.MaxBatch of the
	// segment size).
	walMaxBytes = 8 << 20
	// maxTxEncoded is the most bytes one transaction takes in a batch
	// (walcodec.go): encodeBatch stops only once a batch has reached its
	// bound, so the WAL leaves this much room below wal.MaxBatch.
	maxTxEncoded = txHeaderLen + 8 + 8 + accountLen + xferLen + 8 + 4 + 2 + maxExpiryPerTx*(8+2*entryLen) + MaxLegs*entryLen
)

// Every stage loop follows one pattern: take what is ready; if nothing is,
// exit as invariant 9 says, else let the pressure manager decide how to
// wait; Wake as invariant 8 says.

// runTransactor is the single writer of the working cells.
//
// A linked chain runs whole inside one iteration: if its members are not
// all popped yet, the iteration ends before it and the next pops more; if
// they do not fit the output ring's contiguous room, the chain runs into a
// scratch buffer and is pushed across the ring's wrap (publishChain).
func (l *Ledger) runTransactor(st *pressure.Stage, x *executor) {
	defer l.wg.Done()
	defer func() { l.txDone.Store(true); l.pm.Wake() }()
	reqs := make([]request, min(transactorRun, l.seq.Cap())) // a chain (at most a batch) fits
	scratch := make([]txRecord, min(MaxChain, len(reqs)))
	next := l.base
	var cnt outcomeCounts // this run's outcomes, added to l.outcomes once per run
	var bo backoff
	off, have := 0, 0 // reqs[off:off+have] were popped and not executed yet
	for {
		out := l.toWAL.Reserve(len(reqs))
		if len(out) == 0 { // back pressure: the WAL is behind
			if l.halted() {
				return
			}
			bo.wait()
			continue
		}
		bo = backoff{}
		// Pop more when out has room for more, or when the chain at the
		// head is not all popped (out may be short only because the ring
		// wraps: the chain then goes through publishChain).
		bound := len(out)
		if have < len(reqs) && headChainOpen(reqs[off:off+have]) {
			bound = len(reqs)
		}
		if have < bound {
			if have > 0 && off > 0 {
				copy(reqs, reqs[off:off+have])
				clear(reqs[have : off+have])
			}
			off = 0
			_, m := l.seq.TryPopN(reqs[have:bound])
			have += m
		}
		if have == 0 {
			if l.stopping.Load() && l.seq.Len() == 0 {
				return
			}
			if l.halted() || !st.OnEmpty() {
				return
			}
			continue
		}
		n := min(have, len(out))
		st.OnWork()
		ts := l.now()
		x.dedup.startRun(next, ts)
		x.beginRun(next, ts)
		k := 0
		for k < n {
			if k%touchAhead == 0 {
				x.touch(reqs[off+k : off+min(k+touchAhead, n)])
			}
			r := &reqs[off+k]
			if r.linked && !r.chainOpen {
				c := chainLen(reqs[off+k : off+have])
				if c == 0 { // its members are not all popped yet
					break
				}
				if k+c > n { // no contiguous room for it in out
					if k > 0 {
						break // publish what ran first
					}
					if !l.publishChain(x, reqs[off:off+c], next, ts, scratch[:c], &cnt) {
						return
					}
					next += uint64(c)
					off, have = off+c, have-c
					k = -1 // published already
					break
				}
				x.executeChain(reqs[off+k:off+k+c], next+uint64(k), ts, out[k:k+c])
				for i := k; i < k+c; i++ {
					cnt[out[i].kind][out[i].fail]++
					reqs[off+i] = request{}
				}
				k += c
				continue
			}
			x.execute(r, next+uint64(k), ts, &out[k])
			cnt[out[k].kind][out[k].fail]++
			*r = request{} // drop references to legs and waiters
			k++
		}
		if x.dedup.idx != nil && x.dedup.idx.expired != l.dedupExpired.Load() { // the only writer
			l.dedupExpired.Store(x.dedup.idx.expired)
		}
		if k < 0 { // a chain went through publishChain
			continue
		}
		have -= k
		off += k
		if k == 0 { // the rest of a chain is on its way (TryPushN publishes slot by slot)
			if l.halted() {
				return
			}
			bo.wait()
			continue
		}
		next += uint64(k)
		l.publish(out[:k], next-1, &cnt)
	}
}

// publish makes the records out, the last of them tx last, Computed and
// hands them to the WAL stage.
func (l *Ledger) publish(out []txRecord, last uint64, cnt *outcomeCounts) {
	l.addOutcomes(cnt) // before Computed: Stats sees counts >= the index
	l.computed.Store(last)
	l.waits[Computed].release(TxID(last))
	// Deliver before Commit: once committed, the records belong to the WAL
	// stage, whose Advance clears the slots, so reading a record's waiter
	// after Commit could find it zeroed and lose the delivery (seen as a
	// SubmitAndWait(Computed) that never returned).
	l.deliver(out, Computed)
	l.toWAL.Commit(len(out))
	l.walStage.Wake()
}

// publishChain runs the chain reqs as transactions first.. into scratch and
// pushes it to the WAL ring in as many pieces as the ring's wrap takes. It
// returns false if the ledger halted meanwhile.
func (l *Ledger) publishChain(x *executor, reqs []request, first uint64, ts int64, scratch []txRecord, cnt *outcomeCounts) bool {
	x.executeChain(reqs, first, ts, scratch)
	for i := range scratch {
		cnt[scratch[i].kind][scratch[i].fail]++
		reqs[i] = request{}
	}
	last := first + uint64(len(scratch)) - 1
	l.addOutcomes(cnt)
	l.computed.Store(last)
	l.waits[Computed].release(TxID(last))
	l.deliver(scratch, Computed) // scratch is ours: the WAL stage gets copies
	var bo backoff
	for rest := scratch; len(rest) > 0; {
		k := l.toWAL.TryPushN(rest)
		if k > 0 {
			rest = rest[k:]
			l.walStage.Wake()
			continue
		}
		if l.halted() {
			return false
		}
		bo.wait()
	}
	clear(scratch)
	return true
}

// headChainOpen reports whether reqs starts with a linked chain whose last
// member is not in reqs.
func headChainOpen(reqs []request) bool {
	return len(reqs) > 0 && reqs[0].linked && !reqs[0].chainOpen && chainLen(reqs) == 0
}

// chainLen returns the number of requests of the linked chain that starts
// reqs (every member linked but its last), or 0 if its last member is not
// in reqs.
func chainLen(reqs []request) int {
	for i := range reqs {
		if !reqs[i].linked {
			return i + 1
		}
	}
	return 0
}

// outcomeCounts counts transactions by kind and fail reason.
type outcomeCounts [numKinds][numFailReasons]uint32

// addOutcomes adds the Transactor's counts of one run to the shared
// counters and clears them: a handful of atomic adds per run of up to
// transactorRun transactions, not one per transaction.
func (l *Ledger) addOutcomes(c *outcomeCounts) {
	for k := range c {
		for f, n := range c[k] {
			if n != 0 {
				l.outcomes[k][f].Add(uint64(n))
				c[k][f] = 0
			}
		}
	}
}

// deliver hands the SubmitAndWait callers and SubmitFunc callbacks waiting
// for level their results.
func (l *Ledger) deliver(recs []txRecord, level Level) {
	if l.fns.n.Load() == 0 { // none of recs has a waiter (see fnList.n)
		return
	}
	for i := range recs {
		if r := &recs[i]; r.wlevel == level {
			l.deliverOne(r.w, r)
		}
	}
}

// walBatchBytes is the WAL stage's bound on a batch's encoding, header
// room excluded (runWAL).
func walBatchBytes(cfg *Config) int {
	return min(walMaxBytes, wal.MaxBatch(cfg.WALSegmentSize)-maxTxEncoded) - wal.HeaderRoom
}

// runWAL group-commits whatever the Transactor has computed, up to
// WALMaxBatch transactions, as one record of the WAL's newest segment,
// synced with fdatasync. Under light load that is a batch of one; under
// heavy load transactions pile up during each sync and the next batch is
// large. Committed advances only after the sync returns: everything at or
// below it survives a crash.
func (l *Ledger) runWAL(st *pressure.Stage) {
	defer l.wg.Done()
	defer func() { l.walDone.Store(true); l.pm.Wake() }()
	buf := make([]byte, wal.HeaderRoom, 1<<20)
	maxBytes := walBatchBytes(&l.cfg)
	for {
		recs := l.toWAL.PeekN(l.cfg.WALMaxBatch)
		if len(recs) == 0 {
			if l.txDone.Load() && l.toWAL.Len() == 0 {
				return
			}
			if l.halted() || !st.OnEmpty() {
				return
			}
			continue
		}
		st.OnWork()
		var k int
		buf, k = encodeBatch(buf[:wal.HeaderRoom], recs, maxBytes)
		recs = recs[:k]
		if err := l.replicate(buf[wal.HeaderRoom:], recs); err != nil {
			l.fail(err)
			return
		}
		t0 := time.Now()
		if err := l.wal.Append(buf, recs[0].id, recs[k-1].id); err != nil {
			l.fail(err)
			return
		}
		l.committedLocally(buf[wal.HeaderRoom:])
		l.walSync.observe(uint64(time.Since(t0)))
		l.walGroup.observe(uint64(k))
		l.walBytes.Add(uint64(len(buf) - wal.HeaderRoom))
		l.walBatches.Add(1)
		last := recs[k-1].id
		l.committed.Store(last)
		l.waits[Committed].release(TxID(last))
		l.deliver(recs, Committed)
		// The index's blocks refer to this record (its descriptor goes
		// before the records, so that the Snapshotter finds it with them).
		if l.walRefs != nil {
			seg, off := l.wal.LastRecord()
			if !l.handRef(walRef{seq: seg.Seq, segFirst: seg.First, off: off, last: last, base: recs[0].ts}) {
				return
			}
		}
		var bo backoff
		for off := 0; off < k; {
			dst := l.toSnap.Reserve(k - off)
			if len(dst) == 0 {
				if l.halted() {
					return
				}
				bo.wait()
				continue
			}
			c := copy(dst, recs[off:])
			l.toSnap.Commit(c)
			off += c
			l.snapStage.Wake()
		}
		l.toWAL.Advance(k)
	}
}

// runSnapshotter applies committed entries to the readable balances and
// has the persister write them every SnapshotEvery transactions,
// and when a Snapshot call asks for one (snapWant above the last snapshot
// taken).
func (l *Ledger) runSnapshotter(st *pressure.Stage, refs refWindow) {
	defer l.wg.Done()
	defer close(l.persistCh)
	lastSnap := l.persisted.Load() // tx id of the last snapshot handed over
	applied := l.snapshot.Load()
	var appliedTs int64 // timestamp of tx applied (0 until a batch is applied)
	var run *refRun     // the durable idempotency index's next run, if kept
	if l.cfg.DedupRetention > 0 {
		run = &refRun{}
	}
	accounts := l.visible.Load()
	var created []byte // the accounts a batch created (appendAccount)
	var op bookOp
	ix := l.ix // the history and query indexes, if kept (historyindex.go)
	var cells cellSource = liveCells(l.readable)
	if ix != nil {
		ix.live = true
		defer ix.b.Close()
	}
	for {
		recs := l.toSnap.PeekN(snapshotterRun)
		if len(recs) == 0 {
			if ix != nil && len(ix.pend) > 0 {
				if err := l.commitIndex(ix); err != nil {
					l.fail(err)
					return
				}
				continue
			}
			// A requested snapshot of an idle ledger: everything asked
			// for is applied. Checked before the exit test, so a request
			// made before Close is still served while the pipeline drains.
			if want := l.snapWant.Load(); want > lastSnap && applied >= want && l.takeSnapshot(applied, appliedTs, accounts, &refs, l.snapBook) {
				lastSnap = applied
				continue
			}
			if l.walDone.Load() && l.toSnap.Len() == 0 {
				return
			}
			if l.halted() || !st.OnEmpty() {
				return
			}
			continue
		}
		st.OnWork()
		last := recs[len(recs)-1].id
		// Before any balance store of the batch: a persister that reads
		// one of them and then loads applying sees at least last.
		l.applying.Store(last)
		for i := range recs {
			if i%touchAhead == 0 {
				l.touchCells(recs[i:min(i+touchAhead, len(recs))])
			}
			r := &recs[i]
			// The resulting balance is stored, not added: a single store
			// per entry, and readers never see a torn value.
			if r.extra != nil {
				for _, e := range r.extra.exp { // the expiry scan's, first
					l.storeCell(e.cell, e.value)
				}
			}
			for _, e := range r.entries() {
				l.storeCell(e.cell, e.value)
			}
			if (r.kind == KindTransfer || r.extra != nil) && r.bookOp(&op) {
				if err := l.snapBook.applyOp(&op, l.closedBits.set); err != nil {
					l.fail(err) // cannot happen: the Transactor's book did the same
					return
				}
			}
			if ix != nil && (ix.nHist != 0 || r.kind == KindCreateAccount) {
				if err := ix.history(recs, i, cells); err != nil {
					l.fail(err)
					return
				}
			}
			if r.kind == KindCreateAccount && r.fail == OK {
				created = appendAccount(created, r.account())
			}
			if r.userRef != 0 && r.fail != Duplicate {
				refs.trim(r.id, nil)
				refs.push(refEntry{id: r.id, ref: r.userRef})
				if run != nil {
					run.add(r.id, r.userRef, r.ts)
				}
			}
		}
		// Before any snapshot that covers these transactions: the batch's
		// creations as one record (see encodeAccountRecord).
		if len(created) > 0 {
			err := l.db.Set(idKey(prefixAccount, accounts), sealRecord(created), pebble.NoSync)
			accounts += uint64(len(created) / accountLen)
			created = created[:0]
			if err != nil {
				l.fail(err)
				return
			}
		}
		if run != nil {
			if err := run.flush(l.db); err != nil {
				l.fail(err)
				return
			}
		}
		// The index takes the batch, and writes once it has a block's
		// worth (or the Snapshotter runs out of work, above).
		if ix != nil {
			err := ix.stage(l.walRefs, recs)
			if err == nil && len(ix.pend) >= blockMax {
				err = l.commitIndex(ix)
			}
			if err != nil {
				l.fail(err)
				return
			}
		}
		applied, appliedTs = last, recs[len(recs)-1].ts
		l.visible.Store(accounts) // before Snapshot: a reader seeing the index sees the accounts
		l.snapshot.Store(last)
		l.waits[Snapshot].release(TxID(last))
		l.deliver(recs, Snapshot)
		l.toSnap.Advance(len(recs))
		due := l.cfg.SnapshotEvery > 0 && last-lastSnap >= uint64(l.cfg.SnapshotEvery)
		if want := l.snapWant.Load(); want > lastSnap && last >= want {
			due = true
		}
		// If the previous snapshot is still being written, takeSnapshot
		// skips and the next batch (or idle iteration) tries again.
		if due && l.takeSnapshot(last, appliedTs, accounts, &refs, l.snapBook) {
			lastSnap = last
		}
	}
}

// storeCell stores v into readable cell c with a release store, not
// sync/atomic's sequentially consistent one (a locked XCHG on amd64, which
// also keeps the misses of the next stores from overlapping). The
// Snapshotter is the cells' only writer and every reader loads them with
// atomic loads, so a release store is enough: an aligned 8-byte store is
// never torn, and what readers rely on is ordered by release alone. The
// Snapshot index, stored after a batch's cells, is a release too, so a
// reader that loads it and then a cell sees the batch's value or a newer
// one; and a persister that loads a cell's new value, then applying, sees
// the applying stored before it. The argument steps outside the Go memory
// model as ringbuf's does (ringbuf/release.go); race builds use
// sync/atomic stores and check it within the model.
func (l *Ledger) storeCell(c uint32, v int64) {
	ringbuf.StoreRelease((*atomic.Uint64)(unsafe.Pointer(&l.readable[c])), uint64(v))
}

// touchCells loads the readable cells the entries of recs store into, so
// that their cache misses overlap: stores leave the store buffer in order,
// and each would otherwise wait for its line alone. The compiler keeps an
// atomic load whose value is unused.
func (l *Ledger) touchCells(recs []txRecord) {
	for i := range recs {
		for _, e := range recs[i].entries() {
			l.readable[e.cell].Load()
		}
	}
}

// takeSnapshot hands the persister a snapshot started after tx id at, of
// timestamp ts (the Snapshotter has applied everything up to it), with the
// dedup window as of at; false if the persister is still writing the
// previous one. Nothing is
// copied: the persister reads the readable balances while the Snapshotter
// goes on applying (a fuzzy snapshot, see recoverState).
func (l *Ledger) takeSnapshot(at uint64, ts int64, accounts uint64, refs *refWindow, book *pendingBook) bool {
	s := l.spare.Swap(nil)
	if s == nil {
		return false
	}
	refs.trim(at+1, nil)
	s.txID, s.ts, s.refs, s.accounts = at, ts, refs.entries(), accounts
	s.book = book.encode() // as of at: a copy, O(pending transfers)
	l.persistCh <- s
	return true
}

// runPersister writes the snapshots the Snapshotter hands over, one at a
// time, prunes old snapshots and WAL segments, and releases the Snapshot calls the
// new snapshot covers.
func (l *Ledger) runPersister() {
	defer l.wg.Done()
	var buf []byte
	keep := retentionOf(&l.cfg)
	prunedID, prunedTs := l.recovered.last, wallNow(&l.cfg) // Open pruned
	var ixFlushed uint64                                    // the index's mark its store's last Flush made durable (indexFloor)
	for s := range l.persistCh {
		var err error
		var hook func(uint32)
		if h := l.snapHook.Load(); h != nil {
			hook = *h
		}
		buf, err = writeSnapshot(l.db, &l.cfg, s, l.readable, l.applying.Load, hook, buf)
		if err == nil && l.cfg.WALRetention >= 0 && s.txID > uint64(l.cfg.WALRetention) {
			// Whole segments below the snapshot minus the retention go,
			// and on a follower none the history index will catch up
			// from when it leads (its Apply does not index).
			keep := s.txID - uint64(l.cfg.WALRetention) + 1
			if f := l.rep.walFloor; f != 0 {
				keep = min(keep, f)
			}
			if l.ixdb != nil { // none the index store's catch-up may need
				keep, err = l.indexFloor(keep, &ixFlushed)
			}
			if err == nil {
				_, err = l.wal.RemoveBelow(keep)
			}
		}
		// As of the snapshot's transaction: whatever it finds expired is
		// expired for every transaction the Transactor executes later.
		if err == nil && l.cfg.DedupRetention > 0 && s.ts != 0 && keep.pruneDue(prunedID, prunedTs, s.txID, s.ts) {
			if err = pruneRuns(l.db, keep.graced(), s.txID, s.ts); err == nil {
				prunedID, prunedTs = s.txID, s.ts
			}
		}
		if err != nil {
			l.fail(err)
		} else {
			l.persisted.Store(s.txID)
			l.snapshots.Add(1)
			l.snapWaits.release(TxID(s.txID))
		}
		covered := s.txID
		s.refs = nil
		l.spare.Store(s) // s belongs to the Snapshotter from here on
		// A Snapshotter with a request this snapshot does not cover may
		// be waiting for the buffer: wake it. A request raised after this
		// load is woken for by its caller, whose Wake follows our store.
		if l.snapWant.Load() > covered {
			l.snapStage.Wake()
		}
	}
}
