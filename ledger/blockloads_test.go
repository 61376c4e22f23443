package ledger

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lanework/lanework/ledger/internal/wal"
)

// TestLookupLoadsConcurrently: a lookup of ids over many reference blocks
// in many kept segments (loaded refLoadsMax at a time) answers as the
// submissions did, in the order asked, duplicates and absent ids
// included; damage in two of the spans it loads is the CorruptError of
// the block of the lower ids, every time; a cancelled read stops; and no
// load outlives its read.
func TestLookupLoadsConcurrently(t *testing.T) {
	cfg, l, rng, all := keptOnlyLedger(t, 47, 250)
	var err error
	ctx := context.Background()
	require.NoError(t, l.waitIndexed(ctx, TxID(len(all))))

	last := TxID(len(all))
	lookup := func(ids []TxID) ([]*Result, error) {
		t.Helper()
		got, info, err := l.LookupTransfers(ctx, ids, 0)
		if err != nil {
			return nil, err
		}
		require.Equal(t, last, info.AsOf)
		require.Len(t, got, len(ids))
		for i, id := range ids {
			if id == 0 || id > last {
				require.Nil(t, got[i])
				continue
			}
			require.NotNil(t, got[i], "tx %d", id)
			require.Equal(t, all[id-1], *got[i])
		}
		return got, nil
	}
	for range 5 {
		ids := []TxID{0, last + 1, last, 1}
		for range 2000 {
			ids = append(ids, TxID(1+rng.Uint64N(uint64(last))))
		}
		ids = append(ids, ids[5:50]...) // duplicates, apart from the first ones
		_, err := lookup(ids)
		require.NoError(t, err)
	}

	require.NoError(t, l.Close())
	blocks := indexBlocks(t, cfg.Dir)
	segs := map[uint64]bool{}
	for _, b := range blocks {
		require.True(t, b.isRef)
		segs[b.ref.seq] = true
	}
	require.Greater(t, len(segs), refLoadsMax, "segments")
	require.Greater(t, len(blocks), 8*refLoadsMax, "blocks")

	// Damage in two blocks of different segments, both retained only
	// under index/wal/, each the only block of its record (a damaged chunk
	// fails every block of the record that reads it).
	records := map[walRef]int{}
	for _, b := range blocks {
		records[walRef{seq: b.ref.seq, off: b.ref.off}]++
	}
	alone := func(from int) block {
		for _, b := range blocks[from:] {
			if records[walRef{seq: b.ref.seq, off: b.ref.off}] == 1 {
				return b
			}
		}
		t.Fatalf("no block after %d alone in its record", from)
		return block{}
	}
	lo, hi := alone(len(blocks)/4), alone(len(blocks)/2)
	require.NotEqual(t, lo.ref.seq, hi.ref.seq)
	for _, b := range []block{lo, hi} {
		name := wal.Segment{Seq: b.ref.seq, First: b.ref.segFirst}.Name()
		require.NoFileExists(t, filepath.Join(cfg.Dir, walDir, name))
		flipByte(t, filepath.Join(cfg.Dir, indexDir, walDir, name), wal.PayloadOffset(b.ref.off, int64(b.from+b.n/2)))
	}
	l, err = Open(cfg)
	require.NoError(t, err)
	defer func() {
		require.NoError(t, l.Close())
		goleak.VerifyNone(t)
	}()
	names := func(b block, err error) {
		t.Helper()
		var ce *CorruptError
		require.True(t, errors.As(err, &ce), "%v", err)
		name := wal.Segment{Seq: b.ref.seq, First: b.ref.segFirst}.Name()
		require.Equal(t, filepath.ToSlash(filepath.Join(indexDir, walDir, name)), ce.File)
		require.Equal(t, TxID(b.first), ce.FirstTx)
		require.Equal(t, TxID(b.last()), ce.LastTx)
	}
	// One id of every block, in random order: the loads run concurrently,
	// and which damaged span fails first varies; the error does not.
	var every []TxID
	for _, b := range blocks {
		every = append(every, TxID(b.first+rng.Uint64N(uint64(b.count))))
	}
	for range 20 {
		rng.Shuffle(len(every), func(i, j int) { every[i], every[j] = every[j], every[i] })
		_, err := lookup(every)
		names(lo, err)
	}
	// Without lo's block, hi's; without both, every answer.
	var notLo, neither []TxID
	for _, b := range blocks {
		if b.first != lo.first {
			notLo = append(notLo, TxID(b.last()))
		}
		if b.first != lo.first && b.first != hi.first {
			neither = append(neither, TxID(b.first))
		}
	}
	_, err = lookup(notLo)
	names(hi, err)
	_, err = lookup(neither)
	require.NoError(t, err)

	// A cancelled read loads nothing and says why.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = l.LookupTransfers(cctx, neither, 0)
	require.ErrorIs(t, err, context.Canceled)
}
