package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lanework/lanework/ledger/internal/wal"
	"github.com/stretchr/testify/require"
)

// indexBlocks returns the blocks of the index store of dir, decoded
// (references not read), by first transaction.
func indexBlocks(t *testing.T, dir string) []block {
	t.Helper()
	var out []block
	withIndexDB(t, dir, func(db *pebble.DB) {
		it, err := prefixIter(db, prefixBlock)
		require.NoError(t, err)
		for ok := it.First(); ok; ok = it.Next() {
			var b block
			require.NoError(t, b.decode(it.Key(), it.Value()))
			b.posts, b.offs, b.batch = clone(b.posts), clone(b.offs), clone(b.batch)
			out = append(out, b)
		}
		require.NoError(t, it.Close())
	})
	return out
}

// TestRefBlocksWritten: the Snapshotter's blocks are references, each of
// one WAL record; read through them, every transaction decodes as the
// WAL's own record of it does.
func TestRefBlocksWritten(t *testing.T) {
	cfg, l, _, all := indexedLedger(t, 31)
	require.NoError(t, l.Close())
	bs := walBatches(t, cfg.Dir)
	kept := newKeptSegments(&Config{FS: vfs.Default, Dir: cfg.Dir})
	defer kept.close()
	next := uint64(1)
	for _, b := range indexBlocks(t, cfg.Dir) {
		require.True(t, b.isRef, "block of tx %d is a copy", b.first)
		require.Equal(t, next, b.first)
		next = b.last() + 1
		var rec *batchAt
		for i := range bs {
			if bs[i].first <= b.first && b.first <= bs[i].last {
				rec = &bs[i]
			}
		}
		require.NotNil(t, rec)
		require.LessOrEqual(t, b.last(), rec.last, "block of tx %d..%d spans two records", b.first, b.last())
		require.Equal(t, rec.off, b.ref.off)
		require.NoError(t, b.load(kept))
		want, err := parseBatch(rec.batch)
		require.NoError(t, err)
		var wt, gt walTx
		for {
			more, err := want.next(&wt)
			require.NoError(t, err)
			if !more {
				break
			}
			if wt.id < b.first || wt.id > b.last() {
				continue
			}
			require.NoError(t, b.tx(wt.id, &gt))
			require.Equal(t, wt.result(), gt.result())
		}
	}
	require.EqualValues(t, len(all), next-1)
}

// TestRefBlockDamage: a flipped byte in a kept segment (no longer in wal/:
// retention removed it there) is a CorruptError naming the kept file and
// the offset of the chunk, to the reads that go through it; the ledger and
// the other reads go on.
func TestRefBlockDamage(t *testing.T) {
	cfg, l, _, all := keptOnlyLedger(t, 23, 30)
	var err error
	ctx := context.Background()
	require.NoError(t, l.Close())

	blocks := indexBlocks(t, cfg.Dir)
	b := blocks[len(blocks)/3]
	require.True(t, b.isRef)
	name := wal.Segment{Seq: b.ref.seq, First: b.ref.segFirst}.Name()
	require.NoFileExists(t, filepath.Join(cfg.Dir, walDir, name), "retention kept the segment in wal/: the test shows nothing")
	file := filepath.Join(cfg.Dir, indexDir, walDir, name)
	at := wal.PayloadOffset(b.ref.off, int64(b.from+b.n/2))
	flipByte(t, file, at)

	l, err = Open(cfg)
	require.NoError(t, err)
	check := func(err error) {
		t.Helper()
		var ce *CorruptError
		require.True(t, errors.As(err, &ce), "%v", err)
		require.Equal(t, filepath.ToSlash(filepath.Join(indexDir, walDir, name)), ce.File)
		chunk := max(at&^(32<<10-1), b.ref.off) // the record's first chunk starts at its offset
		require.Equal(t, chunk, ce.Offset, "the chunk holding the flipped byte")
		require.Equal(t, TxID(b.first), ce.FirstTx)
		require.Equal(t, TxID(b.last()), ce.LastTx)
	}
	_, _, err = l.LookupTransfers(ctx, []TxID{TxID(b.first)}, 0)
	check(err)
	_, err = l.QueryTransfers(ctx, TransferFilter{Limit: MaxReadLimit, MinTimestamp: all[b.first-1].Timestamp, MaxTimestamp: all[b.last()-1].Timestamp})
	check(err)
	// A block elsewhere reads.
	last := blocks[len(blocks)-1]
	r, _, err := l.LookupTransfers(ctx, []TxID{TxID(last.first)}, 0)
	require.NoError(t, err)
	require.Equal(t, all[last.first-1].ID, r[0].ID)
	// A kept segment gone: the same error, saying so.
	require.NoError(t, l.Close())
	require.NoError(t, os.Remove(file))
	l, err = Open(cfg)
	require.NoError(t, err)
	_, _, err = l.LookupTransfers(ctx, []TxID{TxID(b.first)}, 0)
	var ce *CorruptError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, filepath.ToSlash(filepath.Join(indexDir, walDir, name)), ce.File)
	require.Contains(t, ce.Reason, "missing")
	require.NoError(t, l.Close())
}

// TestMixedBlocks: an index store holding copies beside references (as a
// checkpoint's receiver does once it indexes its own transactions)
// answers every read as the model does, before and after more writes and
// after a cut through a copy.
func TestMixedBlocks(t *testing.T) {
	cfg, l, rng, all := indexedLedger(t, 37)
	require.NoError(t, l.Close())
	// Every other block becomes a copy (the checkpoint's conversion).
	kept := newKeptSegments(&Config{FS: vfs.Default, Dir: cfg.Dir})
	copies := 0
	withIndexDB(t, cfg.Dir, func(db *pebble.DB) {
		it, err := prefixIter(db, prefixBlock)
		require.NoError(t, err)
		wb := db.NewBatch()
		var b block
		for ok, i := it.First(), 0; ok; ok, i = it.Next(), i+1 {
			require.NoError(t, b.decode(it.Key(), it.Value()))
			require.True(t, b.isRef)
			if i%2 == 0 {
				require.NoError(t, b.load(kept))
				require.NoError(t, wb.Set(it.Key(), b.appendCopy(nil), nil))
				copies++
			}
		}
		require.NoError(t, it.Close())
		require.NoError(t, wb.Commit(pebble.NoSync))
	})
	require.NoError(t, kept.close())
	require.Greater(t, copies, 2)
	l, err := Open(cfg)
	require.NoError(t, err)
	checkIndex(t, l, newHistModel(all), rng)
	ids := accountIDs(t, l)
	ref := uint64(1 << 20)
	r, err := l.SubmitBatchAndWait(context.Background(), histWorkload(rng, 300, ids, &ref), Committed)
	require.NoError(t, err)
	all = append(all, r...)
	checkIndex(t, l, newHistModel(all), rng)
	require.NoError(t, l.Close())
	n := 0
	for _, b := range indexBlocks(t, cfg.Dir) {
		if !b.isRef {
			n++
		}
	}
	require.Equal(t, copies, n, "copies stay copies")

	// A cut through a copy: the log is damaged and ledger recover cuts it
	// inside the transactions of a copy (a copy of a build before may
	// straddle records), which is written again without those above the
	// cut; the damaged record's block goes unread.
	bs := walBatches(t, cfg.Dir)
	victim := bs[len(bs)-2]
	flipByte(t, victim.file, victim.off+19+int64(victim.size)/2)
	var cutAt uint64
	for _, b := range indexBlocks(t, cfg.Dir) {
		if !b.isRef && b.count > 2 && b.last() < victim.first {
			cutAt = b.first + uint64(b.count)/2
		}
	}
	require.NotZero(t, cutAt)
	_, err = truncateDir(nil, cfg.Dir, cutAt)
	require.NoError(t, err)
	l, err = Open(cfg)
	require.NoError(t, err)
	require.EqualValues(t, uint64(len(all))-cutAt, l.IndexStats().Cut)
	checkIndex(t, l, newHistModel(all[:cutAt]), rng)
	require.NoError(t, l.Close())
}

// TestRefBlockReadsConcurrent: reads through references from several
// goroutines, over more kept segments than stay open, while the ledger
// writes: every answer is the transaction asked for.
func TestRefBlockReadsConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 43))
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 64, SnapshotEvery: 500, WALSegmentSize: 256 << 10, WALMaxBatch: 64, Index: true}
	l, err := Open(cfg)
	require.NoError(t, err)
	accts, all := histRounds(t, l, rng, 60, 200)
	ctx := context.Background()
	require.NoError(t, l.waitIndexed(ctx, TxID(len(all))))
	segs, _, err := listSegments(vfs.Default, cfg.Dir)
	require.NoError(t, err)
	require.Greater(t, len(segs), 3)
	l.kept.keep = 1 // every other segment's read opens it again, and evicts another's
	stop := make(chan struct{})
	writer := make(chan error, 1)
	go func() {
		ref := uint64(1 << 20)
		wrng := rand.New(rand.NewPCG(5, 6))
		for {
			select {
			case <-stop:
				writer <- nil
				return
			default:
			}
			if _, err := l.SubmitBatchAndWait(ctx, histWorkload(wrng, 50, accts, &ref), Committed); err != nil {
				writer <- err
				return
			}
		}
	}()
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			grng := rand.New(rand.NewPCG(7, uint64(g)))
			for range 200 {
				ids := make([]TxID, 1+grng.IntN(20))
				for i := range ids {
					ids[i] = TxID(1 + grng.IntN(len(all)))
				}
				got, _, err := l.LookupTransfers(ctx, ids, 0)
				if err == nil {
					for i, r := range got {
						if r == nil || r.ID != ids[i] || r.Timestamp != all[ids[i]-1].Timestamp {
							err = fmt.Errorf("lookup of tx %d: %+v", ids[i], r)
							break
						}
					}
				}
				if err == nil {
					_, err = l.QueryTransfers(ctx, TransferFilter{Limit: 1 + grng.IntN(300), Reverse: grng.IntN(2) == 0})
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
	close(stop)
	require.NoError(t, <-writer)
	require.NoError(t, l.Close())
}

// TestRefBlockCutInsideRecord: ledger recover may cut the log inside a
// record; the reference block straddling the cut is written again as a
// shorter reference to the same record (kept in index/wal/), and the
// index answers as of the cut, and after new transactions take the ids.
func TestRefBlockCutInsideRecord(t *testing.T) {
	cfg, l, rng, all := indexedLedger(t, 47)
	require.NoError(t, l.Close())
	bs := walBatches(t, cfg.Dir)
	victim := bs[len(bs)-2]
	flipByte(t, victim.file, victim.off+19+int64(victim.size)/2)
	var rec *batchAt
	for i := range bs[:len(bs)-2] {
		if bs[i].last-bs[i].first >= 3 {
			rec = &bs[i]
		}
	}
	require.NotNil(t, rec)
	cutAt := rec.first + 1
	var before block
	for _, b := range indexBlocks(t, cfg.Dir) {
		if b.first <= cutAt && cutAt < b.last() {
			before = b
		}
	}
	require.True(t, before.isRef, "no reference straddles tx %d", cutAt)
	_, err := truncateDir(nil, cfg.Dir, cutAt)
	require.NoError(t, err)
	l, err = Open(cfg)
	require.NoError(t, err)
	require.EqualValues(t, uint64(len(all))-cutAt, l.IndexStats().Cut)
	checkIndex(t, l, newHistModel(all[:cutAt]), rng)
	ids := accountIDs(t, l)
	ref := uint64(1 << 20)
	r, err := l.SubmitBatchAndWait(context.Background(), histWorkload(rng, 100, ids, &ref), Committed)
	require.NoError(t, err)
	checkIndex(t, l, newHistModel(append(all[:cutAt:cutAt], r...)), rng)
	require.NoError(t, l.Close())
	for _, b := range indexBlocks(t, cfg.Dir) {
		if b.first == before.first {
			require.True(t, b.isRef)
			require.Equal(t, cutAt, b.last())
			require.Equal(t, before.ref, walRef{seq: b.ref.seq, segFirst: b.ref.segFirst, off: b.ref.off, last: before.last(), base: b.ref.base})
			require.Equal(t, before.from, b.from)
			require.Less(t, b.n, before.n)
		}
	}
}

// accountIDs are the ids of every account of l, as QueryAccounts reads them.
func accountIDs(t *testing.T, l *Ledger) []uint64 {
	t.Helper()
	accts, err := l.QueryAccounts(context.Background(), AccountQuery{Limit: MaxReadLimit})
	require.NoError(t, err)
	ids := make([]uint64, len(accts.Accounts))
	for i, a := range accts.Accounts {
		ids[i] = a.ID
	}
	return ids
}

// keptOnlyLedger opens a ledger with the index and small WAL segments and
// runs histRounds' rounds of 200 on it (its random source seeded with (21,
// seq)), then a snapshot, after which retention has removed the older
// segments from wal/: they are only in index/wal/.
func keptOnlyLedger(t *testing.T, seq uint64, rounds int) (Config, *Ledger, *rand.Rand, []Result) {
	t.Helper()
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 64, SnapshotEvery: 300, WALRetention: 300,
		WALSegmentSize: 256 << 10, WALMaxBatch: 64, Index: true}
	l, err := Open(cfg)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(21, seq))
	_, all := histRounds(t, l, rng, rounds, 200)
	ctx := context.Background()
	require.NoError(t, l.Wait(ctx, TxID(len(all)), Snapshot))
	_, err = l.Snapshot(ctx)
	require.NoError(t, err)
	return cfg, l, rng, all
}
