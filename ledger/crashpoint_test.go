package ledger

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// crashPoint clones a crashable MemFS at its k-th write or sync, before the
// operation happens: the clone is the disk a power cut at that instant
// leaves (unsynced data lost, or a random part of it kept).
type crashPoint struct {
	mem     *vfs.MemFS
	k       int64
	n       atomic.Int64
	keepPct int
	rng     *rand.Rand
	acks    func() []Result // acknowledged so far
	clone   *vfs.MemFS
	atClone []Result
	cloneOp errorfs.Op
	cloneMu sync.Mutex
	ledger  atomic.Pointer[Ledger] // set once open, to tell what was in progress
	midSnap bool
	// snapOps records, in a dry run, the operations during which a
	// snapshot was being written.
	snapOps []int64
}

func (c *crashPoint) String() string { return "crash point" }

func (c *crashPoint) MaybeError(op errorfs.Op) error {
	switch op.Kind {
	case errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
	default:
		return nil
	}
	n := c.n.Add(1)
	if c.k < 0 {
		if l := c.ledger.Load(); l != nil && l.spare.Load() == nil {
			c.cloneMu.Lock()
			c.snapOps = append(c.snapOps, n)
			c.cloneMu.Unlock()
		}
		return nil
	}
	if n != c.k {
		return nil
	}
	// Acks first: each was synced before it was recorded, so before now.
	acks := c.acks()
	clone := c.mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: c.keepPct, RNG: c.rng})
	c.cloneMu.Lock()
	if l := c.ledger.Load(); l != nil {
		c.midSnap = l.spare.Load() == nil // the persister holds the buffer
	}
	c.clone, c.atClone, c.cloneOp = clone, acks, op
	c.cloneMu.Unlock()
	return nil
}

// crashWorkload drives the ledger on fs with one submitter (so that the
// sequence of filesystem operations is nearly the same every run): batches
// of mixed transactions with UserRefs, each acknowledged once Committed
// with its Result.
func crashWorkload(t *testing.T, cfg Config, cp *crashPoint, record func(Result)) {
	l, err := Open(cfg)
	require.NoError(t, err)
	cp.ledger.Store(l)
	ctx := context.Background()
	ref := uint64(0)
	for b := range 40 {
		ops := make([]Op, 8)
		for i := range ops {
			ref++
			a := 1 + uint64(b*8+i)%9
			switch i % 4 {
			case 0, 1:
				ops[i] = Deposit{Account: a, Amount: 100 + ref, UserRef: ref}
			case 2:
				ops[i] = Transfer{From: a, To: 65_599 - a, Amount: 50, UserRef: ref}
			case 3:
				ops[i] = Composite{Legs: []Leg{{Account: a, Delta: -7}, {Account: 65_590, Delta: 7}}, Flags: NoNegative, UserRef: ref - 2}
			}
		}
		first, last, err := l.SubmitBatch(ops)
		require.NoError(t, err)
		require.NoError(t, l.Wait(ctx, last, Committed))
		for id := first; id <= last; id++ {
			r, err := l.Result(id)
			require.NoError(t, err)
			record(r)
		}
	}
	require.NoError(t, l.Close())
}

// TestCrashPoints crashes the ledger at evenly spread write and sync
// operations — inside WAL group commits, between the unsynced chunks of a
// snapshot and its synced manifest, during pruning and pebble's flushes —
// and checks the recovered clone: every acknowledged transaction present
// exactly as acknowledged, balances summing to zero and replaying
// consistently (verifyFS), and acknowledged UserRefs still Duplicates.
func TestCrashPoints(t *testing.T) {
	// Small segments: the crash points fall in rollovers and retention too.
	cfg := Config{Dir: "ledger", MaxAccounts: 65_600, SnapshotEvery: 100, WALRetention: 100, WALMaxBatch: 8, RingSize: 1024, WALSegmentSize: 256 << 10}
	// Dry run: count the operations.
	dry := &crashPoint{mem: vfs.NewCrashableMem(), k: -1, acks: func() []Result { return nil }}
	c := cfg
	c.FS = errorfs.Wrap(dry.mem, dry)
	crashWorkload(t, c, dry, func(Result) {})
	total := dry.n.Load()
	require.Greater(t, total, int64(100))

	// 24 points spread over every operation, and 6 more among those
	// during which the dry run was writing a snapshot (the persister's
	// writes interleave with the WAL's by timing, so an even spread alone
	// hits one in only some runs).
	ks := make([]int64, 0, 30)
	for i := range int64(24) {
		ks = append(ks, 1+i*total/24+i%3)
	}
	for i := range 6 {
		if n := len(dry.snapOps); n > 0 {
			ks = append(ks, dry.snapOps[i*n/6])
		}
	}
	points := len(ks)
	kinds := map[string]int{}
	midSnap := 0
	for i, k := range ks {
		cp := &crashPoint{mem: vfs.NewCrashableMem(), k: k, keepPct: []int{0, 50, 100}[i%3], rng: rand.New(rand.NewPCG(uint64(i), 1))}
		var mu sync.Mutex
		var acks []Result
		cp.acks = func() []Result { mu.Lock(); defer mu.Unlock(); return append([]Result(nil), acks...) }
		c := cfg
		c.FS = errorfs.Wrap(cp.mem, cp)
		crashWorkload(t, c, cp, func(r Result) { mu.Lock(); acks = append(acks, r); mu.Unlock() })
		if cp.clone == nil {
			continue // the op count shifted past the end this run
		}
		kinds[cp.mem.PathBase(cp.cloneOp.Path)[max(0, len(cp.mem.PathBase(cp.cloneOp.Path))-3):]]++
		if cp.midSnap {
			midSnap++
		}
		checkCrashClone(t, cfg, cp.clone, cp.atClone)
	}
	t.Logf("%d crash points over %d write/sync operations, %d while a snapshot was being written; by file suffix: %v", points, total, midSnap, kinds)
	require.Positive(t, midSnap, "no crash point hit a snapshot in progress")
}

func checkCrashClone(t *testing.T, cfg Config, fs vfs.FS, acks []Result) {
	t.Helper()
	cfg.FS = fs
	l, err := Open(cfg)
	require.NoError(t, err)
	x, err := l.Indexes()
	require.NoError(t, err)
	for _, want := range acks {
		require.LessOrEqual(t, want.ID, x.Committed, "acknowledged tx %d lost", want.ID)
		got, err := l.Result(want.ID)
		if err == nil || want.ID > x.Committed-TxID(cfg.WALRetention) {
			require.NoError(t, err)
			require.Equal(t, want, got)
		}
	}
	if len(acks) > 0 {
		r := acks[len(acks)-1]
		orig := r.ID
		if r.Fail == Duplicate {
			orig = r.DupOf
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 1, UserRef: r.UserRef}, Computed)
		cancel()
		if err != nil {
			ix, _ := l.Indexes()
			t.Fatalf("resubmit after reopen: %v; indexes %+v, sequencer ring len %d, pressure %+v", err, ix, l.seq.Len(), l.pm.Stats())
		}
		require.Equal(t, Duplicate, res.Fail)
		require.Equal(t, orig, res.DupOf)
	}
	require.NoError(t, l.Close())
	rep, err := verifyDir(fs, cfg.Dir) // balances sum to zero and replay consistently
	require.NoError(t, err)
	require.GreaterOrEqual(t, rep.LastTx, x.Committed)
}
