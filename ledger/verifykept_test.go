package ledger

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/ledger/internal/wal"
)

// keptOnlyBlocks closes a ledger with the index and retention whose
// oldest segments are only in index/wal/, and returns its directory and
// the reference blocks that name a kept-only segment, in id order.
func keptOnlyBlocks(t *testing.T, seq uint64) (string, []block, []block) {
	t.Helper()
	cfg, l, _, _ := keptOnlyLedger(t, seq, 30)
	require.NoError(t, l.Close())
	all := indexBlocks(t, cfg.Dir)
	var only []block
	for _, b := range all {
		require.True(t, b.isRef)
		name := wal.Segment{Seq: b.ref.seq, First: b.ref.segFirst}.Name()
		if _, err := os.Stat(filepath.Join(cfg.Dir, walDir, name)); errors.Is(err, os.ErrNotExist) {
			only = append(only, b)
		}
	}
	require.NotEmpty(t, only, "retention removed no segment from wal/: the test shows nothing")
	return cfg.Dir, all, only
}

func keptName(b block) string { return wal.Segment{Seq: b.ref.seq, First: b.ref.segFirst}.Name() }

// findingOf returns the findings naming file.
func findingsOf(rep *verifyReport, file string) []*CorruptError {
	var out []*CorruptError
	for _, f := range rep.Findings {
		if f.File == file {
			out = append(out, f)
		}
	}
	return out
}

// TestVerifyKeptClean: a directory with the index and retention (old
// segments only in index/wal/) verifies clean, counting every kept-only
// segment and every reference block, and verify changes nothing.
func TestVerifyKeptClean(t *testing.T) {
	dir, all, _ := keptOnlyBlocks(t, 41)
	kept, _, err := wal.List(vfs.Default, filepath.Join(dir, indexDir, walDir))
	require.NoError(t, err)
	live, _, err := wal.List(vfs.Default, filepath.Join(dir, walDir))
	require.NoError(t, err)
	before := dirDigest(t, dir)
	rep, err := verifyDir(nil, dir)
	require.NoError(t, err)
	require.Empty(t, rep.Findings)
	require.Equal(t, len(kept)-len(live), rep.KeptSegments)
	require.Greater(t, rep.KeptSegments, 1)
	require.Equal(t, len(all), rep.RefBlocks)
	require.Equal(t, before, dirDigest(t, dir), "verify wrote to the directory")
}

// TestVerifyKeptFlippedByte: a byte flipped in each of two kept-only
// segments is a finding naming each (the segment's record, and the block
// that reads it); verify reads past the first to find the second.
func TestVerifyKeptFlippedByte(t *testing.T) {
	dir, _, only := keptOnlyBlocks(t, 43)
	a, b := only[0], only[len(only)-1]
	require.NotEqual(t, keptName(a), keptName(b), "one kept-only segment: the test shows less")
	for _, blk := range []block{a, b} {
		flipByte(t, filepath.Join(dir, indexDir, walDir, keptName(blk)), wal.PayloadOffset(blk.ref.off, int64(blk.from+blk.n/2)))
	}
	rep, err := verifyDir(nil, dir)
	require.ErrorIs(t, err, ErrCorrupt)
	for _, blk := range []block{a, b} {
		file := filepath.ToSlash(filepath.Join(indexDir, walDir, keptName(blk)))
		fs := findingsOf(rep, file)
		require.Len(t, fs, 2, "%s: %v", file, rep.Findings)
		// The segment's check: the damaged record.
		require.Equal(t, blk.ref.off, recordStart(fs[0].Offset), "%v", fs[0])
		// The block's read: the chunk, with the block's ids.
		at := wal.PayloadOffset(blk.ref.off, int64(blk.from+blk.n/2))
		require.Equal(t, max(at&^(32<<10-1), blk.ref.off), fs[1].Offset, "%v", fs[1])
		require.Equal(t, TxID(blk.first), fs[1].FirstTx)
		require.Equal(t, TxID(blk.last()), fs[1].LastTx)
	}
	require.Len(t, rep.Findings, 4, "%v", rep.Findings)
}

// TestVerifyKeptSegmentRemoved: a kept segment that blocks refer to,
// removed, is a finding for each such block, naming it.
func TestVerifyKeptSegmentRemoved(t *testing.T) {
	dir, _, only := keptOnlyBlocks(t, 47)
	gone := keptName(only[len(only)/2])
	require.NoError(t, os.Remove(filepath.Join(dir, indexDir, walDir, gone)))
	rep, err := verifyDir(nil, dir)
	require.ErrorIs(t, err, ErrCorrupt)
	fs := findingsOf(rep, filepath.ToSlash(filepath.Join(indexDir, walDir, gone)))
	n := 0
	for _, b := range only {
		if keptName(b) == gone {
			require.Less(t, n, len(fs), "%v", rep.Findings)
			require.Equal(t, TxID(b.first), fs[n].FirstTx)
			require.Contains(t, fs[n].Reason, "missing")
			n++
		}
	}
	require.Positive(t, n)
	require.Len(t, fs, n, "%v", rep.Findings)
}

// TestVerifyWithoutIndex: a directory without the index checks nothing
// more.
func TestVerifyWithoutIndex(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 300, WALRetention: 300, WALSegmentSize: 256 << 10, WALMaxBatch: 32}
	fillLedger(t, cfg, 3000)
	require.NoDirExists(t, filepath.Join(cfg.Dir, indexDir))
	rep, err := verifyDir(nil, cfg.Dir)
	require.NoError(t, err)
	require.Zero(t, rep.KeptSegments)
	require.Zero(t, rep.RefBlocks)
	require.Positive(t, rep.Transactions)
}

// TestVerifyKeptBlockIDs: a reference block whose record does not hold
// its ids (its value moved to the next id's key) is a finding naming the
// key.
func TestVerifyKeptBlockIDs(t *testing.T) {
	dir, _, only := keptOnlyBlocks(t, 53)
	b := only[len(only)/2]
	key, moved := idKey(prefixBlock, b.first), idKey(prefixBlock, b.first+1)
	withIndexDB(t, dir, func(db *pebble.DB) {
		v, closer, err := db.Get(key)
		require.NoError(t, err)
		v = clone(v)
		require.NoError(t, closer.Close())
		require.NoError(t, db.Delete(key, pebble.NoSync))
		require.NoError(t, db.Set(moved, v, pebble.NoSync))
	})
	rep, err := verifyDir(nil, dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Len(t, rep.Findings, 1, "%v", rep.Findings)
	f := rep.Findings[0]
	require.Equal(t, moved, f.Key)
	require.Equal(t, TxID(b.first+1), f.FirstTx)
	require.Contains(t, f.Reason, "the span starts at tx")
}

// TestVerifyKeptBlocksOfOneRecord: blocks that share a WAL record (batches
// above the 256 transactions of a block) verify clean, each checked from
// where the one before it ended; a block in the middle of a record moved
// to the next id's key is the one finding, and the block after it, whose
// span follows the moved one's, is not.
func TestVerifyKeptBlocksOfOneRecord(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 64, Index: true}
	l, err := Open(cfg)
	require.NoError(t, err)
	histRounds(t, l, rand.New(rand.NewPCG(21, 59)), 6, 700)
	require.NoError(t, l.Close())
	blocks := indexBlocks(t, cfg.Dir)
	mid := -1 // a block with a block of its record on either side
	for i := 1; i+1 < len(blocks); i++ {
		a, b, c := blocks[i-1], blocks[i], blocks[i+1]
		if a.ref.seq == b.ref.seq && a.ref.off == b.ref.off && b.ref.seq == c.ref.seq && b.ref.off == c.ref.off &&
			a.from+a.n == b.from && b.from+b.n == c.from {
			mid = i
			break
		}
	}
	require.GreaterOrEqual(t, mid, 0, "no three blocks of one record: the test shows nothing")
	rep, err := verifyDir(nil, cfg.Dir)
	require.NoError(t, err)
	require.Equal(t, len(blocks), rep.RefBlocks)

	b := blocks[mid]
	key, moved := idKey(prefixBlock, b.first), idKey(prefixBlock, b.first+1)
	withIndexDB(t, cfg.Dir, func(db *pebble.DB) {
		v, closer, err := db.Get(key)
		require.NoError(t, err)
		v = clone(v)
		require.NoError(t, closer.Close())
		require.NoError(t, db.Delete(key, pebble.NoSync))
		require.NoError(t, db.Set(moved, v, pebble.NoSync))
	})
	rep, err = verifyDir(nil, cfg.Dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Len(t, rep.Findings, 1, "%v", rep.Findings)
	require.Equal(t, moved, rep.Findings[0].Key)
	require.Contains(t, rep.Findings[0].Reason, "the span starts at tx")
}
