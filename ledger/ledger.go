package ledger

import (
	"context"
	"errors"
	"fmt"
	"log"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lanework/lanework/ledger/internal/wal"
	"github.com/lanework/lanework/pressure"
	"github.com/lanework/lanework/ringbuf"
)

// state word: the low 32 bits count calls in flight (submitters and readers
// of pebble); the high bits mark the ledger closed or failed.
const (
	closedBit    = 1 << 62
	failedBit    = 1 << 61
	inflightMask = 1<<32 - 1
)

// pad keeps fields written by different goroutines on separate cache lines.
type pad [128]byte

// Ledger is an open ledger. All methods are safe for concurrent use.
//
// Fields are grouped by the stage that writes them; pads keep fields that
// different goroutines write on separate cache lines.
type Ledger struct {
	// Set by Open, read-only after.
	cfg       Config
	db        *pebble.DB
	pm        *pressure.Manager
	base      uint64 // id of Sequencer ticket 0
	epoch     time.Time
	epochWall int64 // with epoch, the Transactor's clock (now)
	recovered recoveryInfo
	// The rings between the stages, and the stages by role for targeted
	// wakes: a publisher wakes the stage it feeds, so parked stages
	// downstream stay parked.
	seq                          *ringbuf.MPSC[request]  // submitters -> Transactor
	toWAL                        *ringbuf.SPSC[txRecord] // Transactor -> WAL
	toSnap                       *ringbuf.SPSC[txRecord] // WAL -> Snapshotter
	txStage, walStage, snapStage *pressure.Stage
	wal                          *wal.Writer    // appended to by the WAL stage only; Find and RemoveBelow from others
	readable                     []atomic.Int64 // cells, 4 per account slot; elements stored by the Snapshotter only
	accts                        *accountTable  // inserted into by the Transactor only; probed by readers
	// snapBook is the Snapshotter's pending book (pending.go), as of the
	// Snapshot index; closedBits the accounts a closing transfer closed,
	// as of it (written by the Snapshotter, read by Lookup).
	snapBook   *pendingBook
	closedBits closedBits
	persistCh  chan *snapshotData // Snapshotter -> persister

	// The progress indexes, one per stage. Each is stored by its stage
	// after the work it names is published (ring commit, WAL sync,
	// balance stores). The atomics are sequentially consistent, so a
	// goroutine that loads an index >= id also observes everything the
	// stage did for id.
	_         pad
	state     atomic.Uint64 // submitters: calls in flight; Close and fail: the closed and failed bits
	_         pad
	sequenced atomic.Uint64 // a follower's Apply; on a leader Sequenced is the Sequencer ring's tail (sequencedIndex)
	_         pad
	computed  atomic.Uint64 // Transactor
	_         pad
	committed atomic.Uint64 // WAL, after the sync returned
	_         pad
	snapshot  atomic.Uint64 // Snapshotter
	applying  atomic.Uint64 // Snapshotter: last id of the batch it is storing (>= snapshot)
	_         pad

	// Waiters, released by the stage that advances their level.
	waits [Replicated + 1]waitList // Wait calls, indexed by Level
	fns   fnList                   // SubmitFunc and SubmitAndWait deliveries not yet made
	// visible is the number of account slots whose creation the
	// Snapshotter has applied: readers see those accounts only.
	visible atomic.Uint64

	// Stopping. halt mirrors failedBit on a line of its own: stages poll
	// it on every empty iteration, and state is written twice by every
	// submit.
	_        pad
	halt     atomic.Bool
	_        pad
	stopping atomic.Bool // Close: set once no submit is in flight
	txDone   atomic.Bool // Transactor: it has published its last record
	walDone  atomic.Bool // WAL: likewise

	// Transactor: counters for Stats.
	_        pad
	outcomes [numKinds][numFailReasons]atomic.Uint64
	// retries past DedupRetention the durable index still named
	dedupExpired atomic.Uint64

	// WAL: counters for Stats.
	_          pad
	walBatches atomic.Uint64 // group commits synced
	walBytes   atomic.Uint64 // their encoded size
	walSync    histogram     // synced commit times, ns
	walGroup   histogram     // transactions per group commit

	// Snapshotter and persister.
	_         pad
	persisted atomic.Uint64 // persister: tx id of the newest persisted snapshot
	snapshots atomic.Uint64 // persister: snapshots made durable since Open
	// spare is the one snapshot buffer while the Snapshotter may fill it
	// (nil while the persister holds it). The persister stores it back and
	// then calls Wake, so a Snapshotter with a request pending, polling
	// spare, never misses it (the Wake contract in package pressure).
	spare atomic.Pointer[snapshotData]
	_     pad
	// snapWant is the highest tx id a Snapshot call needs a persisted
	// snapshot to cover; raised by callers (CAS-max, then Wake), read by
	// the Snapshotter every iteration.
	snapWant  atomic.Uint64
	snapWaits waitList                           // Snapshot calls, by snapWant id, released by the persister
	snapHook  atomic.Pointer[func(chunk uint32)] // tests: runs in the persister after each chunk

	// Lifecycle: Close and fail.
	wg        sync.WaitGroup
	stopped   chan struct{} // closed when the pipeline stops (Close or failure)
	swept     chan struct{} // closed when sweepFns is done
	stopOnce  sync.Once
	errMu     sync.Mutex
	err       error // first storage error
	closeOnce sync.Once
	closeErr  error
	ckptMu    sync.RWMutex // WriteCheckpoint reads under it; close takes it before closing the store

	rep replication // replicate.go

	// The history and query indexes (historyindex.go): written by the
	// Snapshotter; nil without Config.Index or on a follower.
	ix      *indexWriter
	ixdb    *pebble.DB            // the index's own store (indexstore.go), ix.db; nil without ix
	walRefs *ringbuf.SPSC[walRef] // WAL stage -> Snapshotter: each batch's record, for ix (indexhandoff.go)
	kept    *keptSegments         // reads the records ix's blocks refer to; nil without ix
	ixWaits waitList              // reads waiting for the index to hold a transaction (waitIndexed)
	ixCatch catchUpStats          // what Open did to the index
	_       pad
	indexed atomic.Uint64 // Snapshotter: last transaction in the index
}

// Open validates cfg, opens (or creates) the directory, recovers the state
// of the last durable transaction and starts the pipeline. Errors match
// ErrConfig, ErrIncompatible or ErrCorrupt (a *CorruptError), or come from
// pebble.
func Open(cfg Config) (*Ledger, error) { return open(cfg, openMode{}) }

func open(cfg Config, mode openMode) (*Ledger, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	// Everything that can refuse the directory runs on a read-only
	// store, so that a refusal writes nothing.
	memc := allocAhead(cfg.MaxAccounts)
	ro, err := openChecked(cfg.FS, cfg.Dir)
	mem := <-memc
	if err != nil {
		return nil, err
	}
	var m *meta
	var rs *recovered
	var runs []runInfo // the idempotency index, read before anything is written
	var truncs []truncation
	if ro != nil {
		m, err = checkMeta(ro, &cfg)
		if err == nil && m != nil {
			rs, err = recoverStateIn(ro, &cfg, mem, !mode.follower)
		}
		if err == nil && rs != nil {
			defer rs.workc.wait() // on every path: the goroutine ends within Open
		}
		if err == nil && cfg.DedupRetention > 0 {
			runs, err = readRuns(ro)
		}
		if err == nil {
			truncs, err = readTruncations(ro)
		}
		if cerr := ro.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	db, err := pebble.Open(cfg.Dir, pebbleOptions(&cfg))
	if err != nil {
		return nil, openError(cfg.Dir, "", err)
	}
	switch {
	case m == nil: // a new directory
		err = writeMeta(db, &cfg, time.Now().UnixNano())
	case m.FormatVersion != formatVersion: // upgrade: the records decode as they are
		err = writeMeta(db, &cfg, m.CreatedUnixNs)
	}
	if err == nil && rs == nil {
		rs, err = recoverStateIn(db, &cfg, mem, false)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	// The account records of the creations replayed after the snapshot
	// (the Snapshotter of this run will not apply them), unless the
	// records already hold them.
	hold, err := accountRecordsHold(db, rs.accts, rs.snapAccounts)
	if err == nil && !hold {
		err = writeAccountRecords(db, rs.accts, rs.snapAccounts, true)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("ledger: write account records: %w", err)
	}
	if cfg.DedupRetention > 0 {
		idx, err := loadRefIndex(db, &cfg, rs, runs, wallNow(&cfg))
		if err != nil {
			db.Close()
			return nil, err
		}
		rs.dedup = &dedup{idx: idx} // it replaces the window's map
	} else if err := markDedupOff(db); err != nil {
		db.Close()
		return nil, err
	}
	var ix *indexWriter
	if !mode.follower {
		if ix, rs.ixCatch, err = openIndex(db, &cfg, rs); err != nil {
			db.Close()
			return nil, err
		}
		rs.ix = ix
	} else if cfg.Index {
		// A follower does not index; once it opens as a leader, the index
		// catches up from the WAL after where it stopped, which the
		// follower therefore keeps (walFloor).
		if rs.walFloor, err = followerWALFloor(&cfg); err != nil {
			db.Close()
			return nil, err
		}
	}
	if n := len(truncs); n > 0 {
		t := truncs[n-1]
		log.Printf("ledger: %s: ledger recover cut its log after tx %d on %s, accepting the loss of what followed (damage: %s at offset %d, tx %d..%d: %s); %d recover(s) recorded",
			cfg.Dir, t.TruncatedAfter, time.Unix(0, t.UnixNs).UTC().Format(time.RFC3339), t.DamageFile, t.DamageOffset, t.DamageFirstTx, t.DamageLastTx, t.DamageReason, n)
	}
	if t := rs.torn; t != nil {
		log.Printf("ledger: %s: %s was not closed cleanly: its records end at offset %d, %d bytes after that dropped; last transaction kept %d",
			cfg.Dir, t.File, t.Offset, t.Dropped, t.LastKept)
	}
	// Recovered: from here on Open may write. A new segment takes the
	// transactions after the last one kept (an unborn one is replaced).
	hash := new(atomic.Uint64) // the replica hash, from here on advanced past each batch appended
	hash.Store(rs.hash)
	wopts := walOptions(&cfg, db, hash)
	if ix != nil {
		wopts.Keep = keptDir(&cfg) // before any batch: the index refers to segments by name
	}
	w, err := wal.Create(wopts, rs.segs, rs.last+1)
	if err != nil {
		if ix != nil {
			ix.b.Close()
			closeIndexStore(ix.db)
			ix.kept.close()
		}
		db.Close()
		return nil, err
	}
	l, err := start(cfg, db, w, rs, mode, hash)
	if err != nil {
		if ix != nil {
			ix.b.Close()
			closeIndexStore(ix.db)
			ix.kept.close()
		}
		w.Close()
		db.Close()
		return nil, err
	}
	return l, nil
}

func start(cfg Config, db *pebble.DB, w *wal.Writer, rs *recovered, mode openMode, hash *atomic.Uint64) (*Ledger, error) {
	l := &Ledger{
		rep: replication{repl: mode.repl, follower: mode.follower, hash: hash}, cfg: cfg, db: db, wal: w, base: rs.last + 1,
		readable:   rs.bal, // recovery built them in place: no copy
		accts:      rs.accts,
		snapBook:   rs.book.clone(),
		closedBits: rs.closed,
		epoch:      time.Now(),
		persistCh:  make(chan *snapshotData, 1),
		stopped:    make(chan struct{}),
		swept:      make(chan struct{}),
	}
	l.epochWall = l.epoch.UnixNano()
	l.walSync.first, l.walGroup.first = walSyncFirstBucket, 1
	l.recovered = recoveryInfo{last: rs.last, snapshot: rs.snapshot, snapEnd: rs.snapEnd, replayed: rs.replayed, torn: rs.torn}
	var err error
	if l.seq, err = ringbuf.NewMPSC[request](cfg.RingSize); err != nil {
		return nil, err
	}
	if l.toWAL, err = ringbuf.NewSPSC[txRecord](cfg.RingSize); err != nil {
		return nil, err
	}
	if l.toSnap, err = ringbuf.NewSPSC[txRecord](cfg.RingSize); err != nil {
		return nil, err
	}
	for _, p := range []*atomic.Uint64{&l.sequenced, &l.computed, &l.rep.replicated, &l.committed, &l.snapshot, &l.applying} {
		p.Store(rs.last)
	}
	l.persisted.Store(rs.snapshot)
	l.ix, l.ixCatch = rs.ix, rs.ixCatch
	if l.ix != nil {
		l.ixdb = l.ix.db
		l.kept = l.ix.kept
		if l.walRefs, err = newRefRing(cfg.RingSize); err != nil {
			return nil, err
		}
	}
	l.indexed.Store(rs.last)
	l.visible.Store(rs.accts.n)
	l.spare.Store(&snapshotData{})

	l.pm = pressure.New(cfg.WaitStrategy)
	var st [3]*pressure.Stage
	for i, name := range []string{"transactor", "wal", "snapshotter"} {
		if st[i], err = l.pm.Register(name); err != nil {
			return nil, err
		}
	}
	l.txStage, l.walStage, l.snapStage = st[0], st[1], st[2]
	refs := newRefWindow(cfg.DedupWindow)
	for _, r := range rs.refs {
		refs.push(r)
	}
	if l.rep.follower { // Apply replays onto rs; only the persister runs
		l.rep.rs, l.rep.refs, l.rep.lastSnap, l.rep.walFloor = rs, refs, rs.snapshot, rs.walFloor
		if cfg.DedupRetention > 0 {
			l.rep.run = &refRun{}
		}
		l.wg.Add(1)
		go l.runPersister()
		go l.sweepFns()
		return l, nil
	}
	work := rs.workc.wait()
	if work == nil {
		work = newWork(cfg.MaxAccounts, rs.accts.n, l.readable)
	}
	x := &executor{work: work, accts: l.accts, dedup: rs.dedup, maxEntries: cfg.MaxEntries,
		book: rs.book}
	l.wg.Add(4)
	go l.runTransactor(st[0], x)
	go l.runWAL(st[1])
	go l.runSnapshotter(st[2], refs)
	go l.runPersister()
	go l.sweepFns()
	return l, nil
}

// Close stops accepting submissions, lets the pipeline finish every
// transaction already sequenced (each is then durable), stops all
// goroutines and closes the directory. It returns the first storage error
// the ledger hit, if any. Close is idempotent; later calls return the same.
func (l *Ledger) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.close() })
	return l.closeErr
}

func (l *Ledger) close() error {
	l.state.Or(closedBit)
	// Every submit that got past the closed check finishes its push.
	for l.state.Load()&inflightMask != 0 {
		runtime.Gosched()
	}
	l.stopping.Store(true)
	if l.rep.follower {
		close(l.persistCh) // no Apply is in flight: none hands over a snapshot again
	}
	l.pm.Wake()
	l.wg.Wait()
	l.pm.Close()
	l.stop()
	<-l.swept
	l.ckptMu.Lock() // a checkpoint being written finishes first
	defer l.ckptMu.Unlock()
	werr := l.wal.Close()
	// A clean Close flushes pebble's memtable, so that the next Open does
	// not replay pebble's log, twice (its read-only and read-write opens),
	// and flush it then (docs/ledger.md, "Replay in cache lines, and the
	// Opens around it").
	var ferr error
	if l.storageErr() == nil && werr == nil {
		ferr = l.db.Flush()
	}
	err := errors.Join(ferr, l.db.Close())
	return errors.Join(l.storageErr(), werr, err, closeIndexStore(l.ixdb), l.kept.close())
}

// fail records a storage error, refuses further work and stops the stages.
func (l *Ledger) fail(err error) {
	l.errMu.Lock()
	if l.err == nil {
		l.err = fmt.Errorf("%w: %w", ErrFailed, err)
	}
	l.errMu.Unlock()
	l.halt.Store(true)
	l.state.Or(failedBit)
	l.stop()
	l.pm.Wake()
}

func (l *Ledger) storageErr() error {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	return l.err
}

func (l *Ledger) stop() { l.stopOnce.Do(func() { close(l.stopped) }) }

// refused returns the error for state word s, or nil.
func (l *Ledger) refused(s uint64) error {
	switch {
	case s&closedBit != 0:
		return ErrClosed
	case s&failedBit != 0:
		return l.storageErr()
	}
	return nil
}

// enter registers a call that must finish before Close proceeds.
func (l *Ledger) enter() error {
	if err := l.refused(l.state.Add(1)); err != nil {
		l.state.Add(^uint64(0))
		return err
	}
	return nil
}

func (l *Ledger) exit() { l.state.Add(^uint64(0)) }

func (l *Ledger) halted() bool { return l.halt.Load() }

// now is the Transactor's clock: wall time at Open plus monotonic time since,
// so timestamps never go backwards within a run.
func (l *Ledger) now() int64 {
	if l.cfg.now != nil {
		return l.cfg.now()
	}
	return l.epochWall + int64(time.Since(l.epoch))
}

// Submit sequences op and returns its id without waiting for it to execute.
// Invalid input is refused with an *InputError and takes no id. When the
// Sequencer ring is full, Submit waits for room (back pressure).
func (l *Ledger) Submit(op Op) (TxID, error) {
	var r request
	if err := prepare(op, &r); err != nil {
		return 0, &InputError{Err: err}
	}
	r.chainOpen = r.linked // a chain of one op, left open
	return l.push(&r)
}

func (l *Ledger) push(r *request) (TxID, error) {
	if l.rep.follower {
		return 0, l.notLeader()
	}
	if err := l.enter(); err != nil {
		return 0, err
	}
	defer l.exit()
	l.txStage.Prewake() // a parked Transactor starts waking while we publish
	var bo backoff
	for {
		t, ok := l.seq.TryPush(*r)
		if ok {
			id := l.base + t
			l.txStage.Wake()
			return TxID(id), nil
		}
		if l.halted() {
			return 0, l.storageErr()
		}
		bo.wait()
	}
}

// sequencedIndex is the Sequenced index: the last id a push has claimed in
// the Sequencer ring (a claimed push publishes without waiting, so the id
// will be executed), or what a follower's Apply stored. Reading the ring's
// tail spares the submitters a shared maximum: a compare-and-swap on a
// line they would all write for every submit.
func (l *Ledger) sequencedIndex() uint64 {
	return max(l.sequenced.Load(), l.base-1+l.seq.Tail())
}

// SubmitBatch sequences ops atomically under contiguous ids first..last. If
// any op is invalid, none is submitted and the *InputError names its index.
// A batch may hold at most Config.RingSize ops.
func (l *Ledger) SubmitBatch(ops []Op) (first, last TxID, err error) {
	return l.submitBatch(ops, nil, 0)
}

// submitBatch is SubmitBatch; with fn, every op gets a waiter calling fn at
// level (SubmitBatchFunc).
func (l *Ledger) submitBatch(ops []Op, fn func(Result, error), level Level) (first, last TxID, err error) {
	if len(ops) == 0 || len(ops) > l.seq.Cap() {
		return 0, 0, &InputError{Err: ErrBatchSize}
	}
	if l.rep.follower {
		return 0, 0, l.notLeader()
	}
	bp := batchPool.Get().(*[]request)
	defer func() {
		clear(*bp)
		batchPool.Put(bp)
	}()
	reqs := slices.Grow((*bp)[:0], len(ops))[:len(ops)]
	*bp = reqs
	for i, op := range ops {
		if err := prepare(op, &reqs[i]); err != nil {
			return 0, 0, &InputError{Index: i, Err: err}
		}
	}
	if i, err := markChains(reqs); err != nil {
		return 0, 0, &InputError{Index: i, Err: err}
	}
	if fn != nil {
		for i := range reqs {
			w := opWaiterPool.Get().(*opWaiter)
			w.fn = fn
			if !l.fns.add(w) {
				w.fn = nil
				opWaiterPool.Put(w)
				l.dropWaiters(reqs[:i])
				return 0, 0, l.stoppedErr()
			}
			reqs[i].w, reqs[i].wlevel = w, level
		}
	}
	if err := l.enter(); err != nil {
		l.dropWaiters(reqs)
		return 0, 0, err
	}
	defer l.exit()
	l.txStage.Prewake() // as in push
	var bo backoff
	for {
		t, ok := l.seq.TryPushN(reqs)
		if ok {
			f := l.base + t
			lst := f + uint64(len(reqs)) - 1
			l.txStage.Wake()
			return TxID(f), TxID(lst), nil
		}
		if l.halted() {
			l.dropWaiters(reqs)
			return 0, 0, l.storageErr()
		}
		bo.wait()
	}
}

// dropWaiters takes back the waiters of requests that were not submitted:
// nobody else can deliver or sweep them.
func (l *Ledger) dropWaiters(reqs []request) {
	for i := range reqs {
		if w := reqs[i].w; w != nil {
			l.fns.remove(w)
			w.fn = nil
			opWaiterPool.Put(w)
			reqs[i].w = nil
		}
	}
}

var batchPool = sync.Pool{New: func() any { return new([]request) }}

// SubmitAndWait submits op and waits until it reaches level (Computed,
// Committed or Snapshot), then returns its Result. It is SubmitFunc with a
// callback that wakes the caller: the result is delivered by the stage that
// reaches the level, without polling, and a failure or Close ends the wait
// with its error. If ctx ends first, the transaction still executes;
// SubmitAndWait returns ctx's error and a Result carrying only the id.
func (l *Ledger) SubmitAndWait(ctx context.Context, op Op, level Level) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	w := resultWaitPool.Get().(*resultWait)
	id, err := l.SubmitFunc(op, level, w.deliver)
	if err != nil {
		resultWaitPool.Put(w)
		return Result{}, err
	}
	select {
	case <-w.done:
		res, err := w.take()
		if err != nil {
			res.ID = id
		}
		return res, err
	case <-ctx.Done():
		return Result{ID: id}, ctx.Err() // w is abandoned: its callback still runs, into done
	}
}

func (l *Ledger) stoppedErr() error {
	if err := l.storageErr(); err != nil {
		return err
	}
	return ErrClosed
}

func (l *Ledger) index(level Level) uint64 {
	switch level {
	case Sequenced:
		return l.sequencedIndex()
	case Computed:
		return l.computed.Load()
	case Committed:
		return l.committed.Load()
	case Replicated:
		if l.rep.repl == nil && !l.rep.follower {
			return l.committed.Load()
		}
		return l.rep.replicated.Load()
	default:
		return l.snapshot.Load()
	}
}

// Wait blocks until transaction id reaches level (Computed, Committed or
// Snapshot), ctx ends, or the ledger stops. It returns at once if the level
// is already reached. Waiting for an id not yet submitted is allowed.
func (l *Ledger) Wait(ctx context.Context, id TxID, level Level) error {
	if err := l.refused(l.state.Load()); err != nil {
		return err
	}
	if !level.waitable() {
		return ErrLevel
	}
	level = l.waitLevel(level)
	return l.waitFor(ctx, id, &l.waits[level], func() uint64 { return l.index(level) })
}

// waitFor blocks until mark() reaches id, ctx ends, or the ledger stops;
// whoever advances the mark releases wl after storing it. Every wait for a
// progress mark (Wait's levels, the index's mark) goes through it.
func (l *Ledger) waitFor(ctx context.Context, id TxID, wl *waitList, mark func() uint64) error {
	if mark() >= uint64(id) {
		return nil
	}
	w := &idWaiter{id: id, done: make(chan struct{})}
	wl.add(w)
	if mark() >= uint64(id) {
		wl.remove(w)
		return nil
	}
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		wl.remove(w)
		return ctx.Err()
	case <-l.stopped:
		wl.remove(w)
		if mark() >= uint64(id) {
			return nil
		}
		return l.stoppedErr()
	}
}

// Indexes returns the pipeline's progress marks. They are loaded downstream
// first, so Snapshot <= Committed <= Computed <= Sequenced holds in the
// result.
func (l *Ledger) Indexes() (Indexes, error) {
	if err := l.refused(l.state.Load()); err != nil {
		return Indexes{}, err
	}
	return l.indexes(), nil
}

func (l *Ledger) indexes() Indexes {
	var x Indexes
	x.Snapshot = TxID(l.snapshot.Load())
	x.Committed = TxID(l.committed.Load())
	x.Computed = TxID(l.computed.Load())
	x.Sequenced = TxID(l.sequencedIndex())
	return x
}

// Status returns the highest level transaction id has reached, derived
// from the indexes, or Unknown if it has not been sequenced.
func (l *Ledger) Status(id TxID) (Level, error) {
	if err := l.refused(l.state.Load()); err != nil {
		return Unknown, err
	}
	return l.indexes().levelOf(id), nil
}

// Result returns the outcome of a committed transaction, read from the WAL
// (recent segments are usually in the page cache). It does not wait: it
// fails with ErrNotCommitted for a transaction not yet durable (call Wait
// with Committed first, or use SubmitAndWait) and with ErrNotFound for an id
// never sequenced or below the WAL retention.
func (l *Ledger) Result(id TxID) (Result, error) {
	if err := l.enter(); err != nil {
		return Result{}, err
	}
	defer l.exit()
	switch x := l.indexes(); {
	case id == 0 || id > x.Sequenced:
		return Result{}, fmt.Errorf("tx %d: %w", id, ErrNotFound)
	case id > x.Committed:
		return Result{}, fmt.Errorf("tx %d: %w", id, ErrNotCommitted)
	}
	return readResult(l.wal, uint64(id))
}

// Balance returns account's posted balance, credits_posted -
// debits_posted (see Lookup for what it includes). It is two atomic loads;
// values are never torn, though the two may straddle a batch being applied.
func (l *Ledger) Balance(account uint64) (int64, error) {
	a, err := l.Lookup(account)
	if err != nil {
		return 0, err
	}
	return a.Balance(), nil
}

// Lookup returns account id with its columns. It sees every transaction up
// to the Snapshot index loaded before it (and possibly some of the batch
// being applied); an account whose creation has not reached the Snapshot
// index yet is not found. Each column is one atomic load: never torn.
func (l *Ledger) Lookup(id uint64) (Account, error) {
	if err := l.refused(l.state.Load()); err != nil {
		return Account{}, err
	}
	s, ok := l.accts.slot(id)
	if !ok || s >= l.visible.Load() {
		return Account{}, fmt.Errorf("account %d: %w", id, ErrAccountNotFound)
	}
	return l.account(s), nil
}
