package ledger

import (
	"context"
	"encoding/binary"
	"flag"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

var dedupRetryAfter = flag.Int("ledger.dedup-retry-after", 300_000,
	"transactions between the original and its retry in TestDedupRetentionAcrossRestart (the issue's case: 10000000)")

// fakeClock is the Transactor's clock in a test: it moves only when told.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) now() int64              { return c.ns.Load() }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// fillNoRefs submits n deposits without a UserRef, but one in 1,000 with a
// fresh one (so the filter and the index see traffic), and waits until the
// last is applied.
func fillNoRefs(t *testing.T, l *Ledger, n int, refBase uint64) {
	t.Helper()
	ops := make([]Op, 0, 4096)
	var last TxID
	for i := 0; i < n; {
		ops = ops[:0]
		for ; len(ops) < cap(ops) && i < n; i++ {
			var ref uint64
			if i%1000 == 999 {
				ref = refBase + uint64(i)
			}
			ops = append(ops, Deposit{Account: 2 + uint64(i)%8, Amount: 1, UserRef: ref})
		}
		_, lst, err := l.SubmitBatch(ops)
		require.NoError(t, err)
		last = lst
	}
	require.NoError(t, l.Wait(context.Background(), last, Snapshot))
}

// refEntryOf returns the newest transaction the closed ledger's index in dir
// names for ref.
func refEntryOf(t *testing.T, dir string, ref uint64) (id uint64, ok bool) {
	t.Helper()
	withDB(t, dir, func(db *pebble.DB) {
		require.NoError(t, scanRuns(db, func(_ []byte, r runInfo) error {
			for e := r.entries; len(e) > 0; e = e[refRunEntry:] {
				if binary.LittleEndian.Uint64(e[8:]) == ref {
					id, ok = binary.LittleEndian.Uint64(e), true
				}
			}
			return nil
		}))
	})
	return id, ok
}

// A retry long after the original, past the in-memory window, the WAL
// retention and a restart, and an hour later by the clock, is a Duplicate
// naming the original: the durable index remembers it. Past the retention
// it is executed as a new transaction and counted; then the persister
// prunes the entry.
func TestDedupRetentionAcrossRestart(t *testing.T) {
	const ref = 777
	clk := newFakeClock()
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 16, SnapshotEvery: 50_000, WALRetention: 10_000,
		WALSegmentSize: 1 << 20, DedupWindow: 1024, now: clk.now}
	l, err := Open(cfg)
	require.NoError(t, err)
	createAccounts(t, l, cfg.MaxAccounts)
	ctx := context.Background()
	orig, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5, UserRef: ref}, Committed)
	require.NoError(t, err)
	require.Equal(t, OK, orig.Fail)
	fillNoRefs(t, l, *dedupRetryAfter, 1<<40)
	_, err = l.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	bs := walBatches(t, cfg.Dir)
	require.Greater(t, bs[0].first, uint64(orig.ID), "the WAL no longer holds the original: only the index does")

	clk.advance(time.Hour)
	l, err = Open(cfg)
	require.NoError(t, err)
	retry, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5, UserRef: ref}, Committed)
	require.NoError(t, err)
	require.Equal(t, Duplicate, retry.Fail)
	require.Equal(t, orig.ID, retry.DupOf)
	require.Greater(t, uint64(retry.ID-orig.ID), uint64(*dedupRetryAfter))
	b, err := l.Balance(1)
	require.NoError(t, err)
	require.Equal(t, int64(5), b, "applied once")

	// A day later the retention has passed: the retry is a new transaction,
	// and the ledger says so in its stats.
	clk.advance(24 * time.Hour)
	late, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5, UserRef: ref}, Snapshot)
	require.NoError(t, err)
	require.Equal(t, OK, late.Fail)
	require.Equal(t, uint64(1), l.Stats().DedupExpired)
	// The new transaction is the ref's original from now on.
	again, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5, UserRef: ref}, Committed)
	require.NoError(t, err)
	require.Equal(t, Duplicate, again.Fail)
	require.Equal(t, late.ID, again.DupOf)
	require.NoError(t, l.Close())
	id, ok := refEntryOf(t, cfg.Dir, ref)
	require.True(t, ok)
	require.Equal(t, uint64(late.ID), id)
}

// The persister prunes entries past the retention (plus its grace), and Open
// does too; the count limit forgets a ref after that many transactions.
func TestDedupRetentionPrunes(t *testing.T) {
	clk := newFakeClock()
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 16, SnapshotEvery: 10_000, DedupWindow: 1024,
		DedupRetention: time.Hour, now: clk.now}
	l, err := Open(cfg)
	require.NoError(t, err)
	createAccounts(t, l, cfg.MaxAccounts)
	ctx := context.Background()
	_, err = l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5, UserRef: 1}, Snapshot)
	require.NoError(t, err)
	clk.advance(30 * time.Minute)
	_, err = l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5, UserRef: 2}, Snapshot)
	require.NoError(t, err)
	clk.advance(40 * time.Minute) // ref 1 is 70 min old: past 1 h plus an eighth
	fillNoRefs(t, l, 20_000, 1<<40)
	_, err = l.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	_, ok := refEntryOf(t, cfg.Dir, 1)
	require.False(t, ok, "pruned by the persister")
	_, ok = refEntryOf(t, cfg.Dir, 2)
	require.True(t, ok, "within retention")

	clk.advance(time.Hour)
	l, err = Open(cfg)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	_, ok = refEntryOf(t, cfg.Dir, 2)
	require.False(t, ok, "pruned by Open")

	// The count limit.
	cfg = Config{Dir: t.TempDir(), MaxAccounts: 16, SnapshotEvery: 10_000, DedupWindow: 1024,
		DedupRetentionTxs: 5_000, now: clk.now}
	l, err = Open(cfg)
	require.NoError(t, err)
	createAccounts(t, l, cfg.MaxAccounts)
	orig, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5, UserRef: 3}, Committed)
	require.NoError(t, err)
	fillNoRefs(t, l, 3_000, 1<<40)
	retry, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5, UserRef: 3}, Committed)
	require.NoError(t, err)
	require.Equal(t, Duplicate, retry.Fail, "3,000 transactions later: past the window, within the count")
	require.Equal(t, orig.ID, retry.DupOf)
	fillNoRefs(t, l, 3_000, 1<<41)
	late, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5, UserRef: 3}, Committed)
	require.NoError(t, err)
	require.Equal(t, OK, late.Fail, "6,000 transactions later: past the count")
	require.Equal(t, uint64(1), l.Stats().DedupExpired)
	require.NoError(t, l.Close())
}

// With DedupRetention negative only the window remembers: no index is
// written.
func TestDedupRetentionOff(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 16, DedupWindow: 1024, DedupRetention: -1}
	l, err := Open(cfg)
	require.NoError(t, err)
	createAccounts(t, l, cfg.MaxAccounts)
	ctx := context.Background()
	_, err = l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5, UserRef: 9}, Snapshot)
	require.NoError(t, err)
	fillNoRefs(t, l, 2_000, 1<<40)
	r, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5, UserRef: 9}, Committed)
	require.NoError(t, err)
	require.Equal(t, OK, r.Fail, "past the window")
	require.NoError(t, l.Close())
	_, ok := refEntryOf(t, cfg.Dir, 9)
	require.False(t, ok)
}

func TestRefTable(t *testing.T) {
	tb := newRefTable(0)
	const n = 3 * refTableMinSlots // grows twice
	for i := uint64(1); i <= n; i++ {
		tb.put(refHash(i*7919), i, 0)
	}
	require.Greater(t, len(tb.slots), 2*n)
	for i := uint64(1); i <= n; i++ {
		id, ok := tb.get(refHash(i * 7919))
		require.True(t, ok)
		require.Equal(t, i, id)
		_, ok = tb.get(refHash(i*7919 + 1))
		require.False(t, ok, "exact: no false positive")
	}
	tb.put(refHash(7919), n+1, 0) // a ref used again replaces its entry
	id, _ := tb.get(refHash(7919))
	require.Equal(t, uint64(n+1), id)
	// A rebuild drops what is below keepFrom and keeps the rest.
	size := len(tb.slots)
	for i := uint64(n + 2); tb.n < size/2; i++ {
		tb.put(refHash(i*7919), i, 0)
	}
	tb.put(refHash(1), 1<<40, n) // past half full: rebuilt
	require.Equal(t, size, len(tb.slots), "most entries were below keepFrom: no growth")
	_, ok := tb.get(refHash(2 * 7919))
	require.False(t, ok, "dropped")
	id, ok = tb.get(refHash(7919))
	require.True(t, ok)
	require.Equal(t, uint64(n+1), id)
}

func TestRetentionFirstKept(t *testing.T) {
	k := refRetention{age: int64(time.Hour), txs: 1000}
	marks := []refMark{{id: 1, ts: 0}, {id: 100, ts: int64(30 * time.Minute)}, {id: 200, ts: int64(90 * time.Minute)}}
	require.Equal(t, uint64(0), k.firstKept(marks, 300, int64(50*time.Minute)))
	require.Equal(t, uint64(1), k.firstKept(marks, 300, int64(61*time.Minute)), "tx 1 is older than an hour")
	require.Equal(t, uint64(100), k.firstKept(marks, 300, int64(91*time.Minute)))
	require.Equal(t, uint64(2000), k.firstKept(marks, 3000, int64(91*time.Minute)), "the count limit passes first")
}

// A torn tail Open drops takes its refs with it: the ids are used again,
// and a ref of a dropped (never acknowledged) transaction is new.
func TestDedupIndexCutWithTornTail(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALMaxBatch: 8}
	l, err := Open(cfg)
	require.NoError(t, err)
	created := uint64(createAccounts(t, l, cfg.MaxAccounts))
	ctx := context.Background()
	for i := uint64(1); i <= 40; i++ {
		_, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 1, UserRef: 100 + i}, Committed)
		require.NoError(t, err)
	}
	require.NoError(t, l.Close())
	bs := walBatches(t, cfg.Dir)
	last := bs[len(bs)-1]
	require.Equal(t, created+40, last.last)
	flipByte(t, last.file, last.off+19+int64(last.size)/2)
	_, ok := refEntryOf(t, cfg.Dir, 140)
	require.True(t, ok, "indexed before the damage")

	l, err = Open(cfg)
	require.NoError(t, err)
	require.NotNil(t, l.recovered.torn)
	r, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 1, UserRef: 140}, Committed)
	require.NoError(t, err)
	require.Equal(t, OK, r.Fail, "the original was dropped with the tail")
	require.Equal(t, TxID(last.first), r.ID, "its id is used again")
	r, err = l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 1, UserRef: 101}, Committed)
	require.NoError(t, err)
	require.Equal(t, Duplicate, r.Fail, "a ref before the tail is still remembered")
	require.NoError(t, l.Close())
}

// Turning the index on for a directory written without it keeps the
// window's refs: the snapshot's window and the replay are loaded too.
func TestDedupIndexTurnedOn(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 16, DedupWindow: 1024, DedupRetention: -1, SnapshotEvery: -1}
	l, err := Open(cfg)
	require.NoError(t, err)
	createAccounts(t, l, cfg.MaxAccounts)
	ctx := context.Background()
	orig, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5, UserRef: 55}, Committed)
	require.NoError(t, err)
	_, err = l.Snapshot(ctx) // the window is in the snapshot, no run in pebble
	require.NoError(t, err)
	require.NoError(t, l.Close())
	_, ok := refEntryOf(t, cfg.Dir, 55)
	require.False(t, ok)

	cfg.DedupRetention = 0 // the default: on
	l, err = Open(cfg)
	require.NoError(t, err)
	r, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 5, UserRef: 55}, Committed)
	require.NoError(t, err)
	require.Equal(t, Duplicate, r.Fail)
	require.Equal(t, orig.ID, r.DupOf)
	require.NoError(t, l.Close())
}
