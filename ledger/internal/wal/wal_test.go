package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testOptions use batches of [first u64][last u64][padding]: Span reads
// the ids and checks nothing else.
func testOptions(fs vfs.FS) Options {
	return Options{FS: fs, Dir: "wal", SegmentSize: MinSegmentSize, Span: func(p []byte) (uint64, uint64, error) {
		if len(p) < 16 {
			return 0, 0, errors.New("short batch")
		}
		return binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:]), nil
	}}
}

func batch(first, last uint64, size int) []byte {
	b := make([]byte, HeaderRoom+16+size)
	binary.LittleEndian.PutUint64(b[HeaderRoom:], first)
	binary.LittleEndian.PutUint64(b[HeaderRoom+8:], last)
	return b
}

// Batches written across several segment rollovers read back in order,
// Find locates each, retention removes whole old segments only and records
// the new oldest, and a closed log scans clean.
func TestWriteRolloverFindRemove(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	var created, oldest []uint64
	opts.Created = func(s Segment) error { created = append(created, s.Seq); return nil }
	opts.Oldest = func(s Segment) error { oldest = append(oldest, s.Seq); return nil }
	w, err := Create(opts, nil, 1)
	require.NoError(t, err)
	next := uint64(1)
	for i := range 300 {
		n := uint64(1 + i%5)
		require.NoError(t, w.Append(batch(next, next+n-1, 900), next, next+n-1))
		next += n
	}
	require.Error(t, w.Append(batch(next+1, next+1, 10), next+1, next+1), "a gap")
	segs := w.Segments()
	require.Greater(t, len(segs), 3, "rolled over")
	require.Equal(t, []uint64{1}, oldest)
	require.Len(t, created, len(segs))
	for _, id := range []uint64{1, 2, next / 2, next - 1} {
		var got uint64
		require.NoError(t, w.Find(id, func(p []byte) error { got = binary.LittleEndian.Uint64(p); return nil }))
		require.LessOrEqual(t, got, id)
	}
	require.ErrorIs(t, w.Find(next, func([]byte) error { return nil }), ErrNotFound)
	removed, err := w.RemoveBelow(segs[2].First)
	require.NoError(t, err)
	require.Equal(t, 2, removed)
	require.Equal(t, []uint64{1, segs[2].Seq}, oldest)
	require.ErrorIs(t, w.Find(1, func([]byte) error { return nil }), ErrNotFound)
	require.NoError(t, w.Close())

	var seen uint64
	res, err := Scan(opts, Bounds{Oldest: segs[2].Seq, Newest: segs[len(segs)-1].Seq}, 0, func(_ Segment, _ int64, p []byte) error {
		seen = binary.LittleEndian.Uint64(p[8:])
		return nil
	})
	require.NoError(t, err)
	require.Nil(t, res.Torn, "closed cleanly")
	require.Equal(t, segs[2].First, res.First)
	require.Equal(t, next-1, res.Last)
	require.Equal(t, next-1, seen)

	// Bounds that name segments the log no longer has are refused.
	_, err = Scan(opts, Bounds{Oldest: 1}, 0, func(Segment, int64, []byte) error { return nil })
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.Contains(t, ce.Reason, "oldest segments missing")
	_, err = Scan(opts, Bounds{Newest: segs[len(segs)-1].Seq + 1}, 0, func(Segment, int64, []byte) error { return nil })
	require.ErrorAs(t, err, &ce)
	require.Contains(t, ce.Reason, "newest segments missing")
}

// A log whose writer was never closed (a crash) ends with a torn-tail
// report of zero dropped bytes; a new Writer continues after it, and the
// old segment then reads as an ordinary older one.
func TestUncleanEndThenContinue(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	w, err := Create(opts, nil, 1)
	require.NoError(t, err)
	for i := uint64(1); i <= 10; i++ {
		require.NoError(t, w.Append(batch(i, i, 100), i, i))
	}
	// Simulate the crash: stop the preparer and flusher without the trailer.
	crashed := crash(t, w, fs)

	res, err := Scan(testOptions(crashed), Bounds{}, 0, func(Segment, int64, []byte) error { return nil })
	require.NoError(t, err)
	require.NotNil(t, res.Torn)
	require.Zero(t, res.Torn.Dropped)
	require.Equal(t, uint64(10), res.Torn.LastKept)
	w, err = Create(testOptions(crashed), res.Segments, 11)
	require.NoError(t, err)
	require.NoError(t, w.Append(batch(11, 11, 100), 11, 11))
	require.NoError(t, w.Close())
	res, err = Scan(testOptions(crashed), Bounds{}, 0, func(Segment, int64, []byte) error { return nil })
	require.NoError(t, err)
	require.Nil(t, res.Torn)
	require.Equal(t, uint64(11), res.Last)
}

// crash copies w's log as a crash would leave it: the preparer stopped and
// no EOF trailer written; then it releases w.
func crash(t *testing.T, w *Writer, fs vfs.FS) vfs.FS {
	t.Helper()
	close(w.quit)
	w.prepWG.Wait()
	crashed := vfs.NewMem()
	require.NoError(t, copyFS(fs, crashed, "wal"))
	require.NoError(t, w.lw.Close())
	require.NoError(t, w.dir.Close())
	return crashed
}

func copyFS(from, to vfs.FS, dir string) error {
	if err := to.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names, err := from.List(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := vfs.CopyAcrossFS(from, from.PathJoin(dir, n), to, to.PathJoin(dir, n)); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	return nil
}

// The sparse segment Create opens is left at the first Append after the
// preparer has written out its successor, and never before it holds a
// batch: no segment is empty, and the log reads back whole.
func TestLeavesSparseSegment(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	w, err := Create(opts, nil, 1)
	require.NoError(t, err)
	prepared := <-w.prepDone // the successor Create asked for is ready ...
	require.NoError(t, prepared)
	w.prepDone <- prepared // ... and stays ready for Append
	require.NoError(t, w.Append(batch(1, 3, 100), 1, 3))
	require.Len(t, w.Segments(), 1, "the sparse segment holds its first batch")
	require.NoError(t, w.Append(batch(4, 4, 100), 4, 4))
	segs := w.Segments()
	require.Len(t, segs, 2, "left once the successor was ready")
	require.Equal(t, uint64(4), segs[1].First)
	require.False(t, w.sparse)
	for i := uint64(5); i <= 50; i++ { // no second early rollover
		require.NoError(t, w.Append(batch(i, i, 100), i, i))
	}
	require.Len(t, w.Segments(), 2)
	require.NoError(t, w.Close())
	var ids []uint64
	res, err := Scan(opts, Bounds{}, 0, func(_ Segment, _ int64, p []byte) error {
		ids = append(ids, binary.LittleEndian.Uint64(p))
		return nil
	})
	require.NoError(t, err)
	require.Nil(t, res.Torn)
	require.Equal(t, uint64(50), res.Last)
	require.Len(t, ids, 48)
	require.Equal(t, []uint64{1, 4, 5}, ids[:3])
}

// Close right after Create finds the preparer's request either answered or
// never taken, and returns in both cases (it once waited forever for an
// answer to a request the preparer left behind when it saw quit first).
func TestCloseRightAfterCreate(t *testing.T) {
	for i := range 200 {
		fs := vfs.NewMem()
		w, err := Create(testOptions(fs), nil, 1)
		require.NoError(t, err)
		if i%2 == 1 {
			require.NoError(t, w.Append(batch(1, 1, 100), 1, 1))
		}
		require.NoError(t, w.Close())
	}
}

// Retention keeps the newest retired segment as recycle.tmp and the
// preparer reuses it: the next segment starts over an earlier one's
// records. Scan tells them from its own by log number: a crash mid-segment
// is an ordinary unclean end with nothing dropped, damage to the last
// record is a torn tail, damage before valid records is refused, and a
// segment renamed into place whose header never became durable is unborn.
func TestRecycledSegment(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	w, err := Create(opts, nil, 1)
	require.NoError(t, err)
	next := uint64(1)
	add := func() {
		b := batch(next, next, 900)
		for i := HeaderRoom + 16; i < len(b); i++ {
			b[i] = 0xab // so that recycled bytes are not zeros
		}
		require.NoError(t, w.Append(b, next, next))
		next++
	}
	for len(w.Segments()) < 5 {
		add()
	}
	segs := w.Segments()
	keep := vfs.NewMem() // a retired segment's bytes, for the unborn case
	require.NoError(t, vfs.CopyAcrossFS(fs, "wal/"+segs[2].Name(), keep, "retired"))
	removed, err := w.RemoveBelow(segs[3].First)
	require.NoError(t, err)
	require.Equal(t, 3, removed)
	_, err = fs.Stat("wal/" + recycleTmp)
	require.NoError(t, err, "the newest retired segment is the spare")
	for _, s := range segs[:3] {
		_, err := fs.Stat("wal/" + s.Name())
		require.True(t, isNotExist(err), "%s retired", s.Name())
	}
	// Write until the current segment is the recycled one (an earlier
	// segment's bytes follow what was written), then a few batches more.
	overOld := func() bool {
		f, err := fs.Open("wal/" + w.current().Name())
		require.NoError(t, err)
		defer f.Close()
		b := make([]byte, 64)
		_, err = f.ReadAt(b, w.lw.Size())
		require.NoError(t, err)
		return !bytes.Equal(b, make([]byte, 64))
	}
	for w.Recycled() == 0 || !overOld() {
		add()
	}
	for range 3 {
		add()
	}
	crashed := crash(t, w, fs)
	newest := w.current()

	scan := func(fs vfs.FS) (Result, error) {
		return Scan(testOptions(fs), Bounds{}, 0, func(Segment, int64, []byte) error { return nil })
	}
	res, err := scan(crashed)
	require.NoError(t, err)
	require.NotNil(t, res.Torn)
	require.Zero(t, res.Torn.Dropped, "the recycled bytes are not this segment's")
	require.Equal(t, next-1, res.Torn.LastKept)
	require.Equal(t, next-1, res.Last)
	tail := make([]byte, 64)
	f, err := crashed.Open("wal/" + newest.Name())
	require.NoError(t, err)
	_, err = f.ReadAt(tail, res.Torn.Offset)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NotEqual(t, make([]byte, 64), tail, "the segment holds an earlier one's bytes after its records")

	// Offsets of the newest segment's batches, from a clean scan.
	var offs []int64
	_, err = Scan(testOptions(crashed), Bounds{}, 0, func(s Segment, off int64, _ []byte) error {
		if s == newest {
			offs = append(offs, off)
		}
		return nil
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(offs), 4)
	offs = offs[len(offs)-4:]
	damaged := func(off int64) vfs.FS {
		d := vfs.NewMem()
		require.NoError(t, copyFS(crashed, d, "wal"))
		f, err := d.OpenReadWrite("wal/"+newest.Name(), vfs.WriteCategoryUnspecified)
		require.NoError(t, err)
		b := []byte{0}
		_, err = f.ReadAt(b, off)
		require.NoError(t, err)
		b[0] ^= 0x40
		_, err = f.WriteAt(b, off)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		return d
	}
	res, err = scan(damaged(offs[3] + chunkHeader + 100))
	require.NoError(t, err, "damage to the last record is a torn tail")
	require.Equal(t, offs[3], res.Torn.Offset)
	require.Positive(t, res.Torn.Dropped)
	require.Equal(t, next-2, res.Torn.LastKept)
	_, err = scan(damaged(offs[2] + chunkHeader + 100))
	var ce *CorruptError
	require.ErrorAs(t, err, &ce, "damage before a valid record is refused")
	require.Equal(t, offs[2], ce.Offset)

	// A retired segment renamed to the next segment's name, its own header
	// never written: unborn. A live segment's copy there is refused.
	unborn := Segment{Seq: newest.Seq + 1, First: next}
	require.NoError(t, vfs.CopyAcrossFS(crashed, "wal/"+segs[3].Name(), crashed, "wal/"+unborn.Name()))
	_, err = scan(crashed)
	require.ErrorAs(t, err, &ce, "a copy of live segment %d", segs[3].Seq)
	require.Equal(t, unborn.Name(), ce.File)
	require.NoError(t, crashed.Remove("wal/"+unborn.Name()))
	require.NoError(t, vfs.CopyAcrossFS(keep, "retired", crashed, "wal/"+unborn.Name()))
	res, err = scan(crashed)
	require.NoError(t, err)
	require.Equal(t, unborn.Name(), res.Unborn)
	require.Equal(t, next-1, res.Last)
}

// pebble's LogWriter wakes a SyncRecord caller before it stores the new
// synced offset, so the next record may carry the offset from before the
// record just synced. Damage to that synced record is still refused: a
// later chunk that begins a record proves it was synced, whatever offset
// it carries.
func TestDamageBeforeStaleSyncedOffset(t *testing.T) {
	fs := vfs.NewMem()
	opts := testOptions(fs)
	w, err := Create(opts, nil, 1)
	require.NoError(t, err)
	for i := uint64(1); i <= 4; i++ {
		require.NoError(t, w.Append(batch(i, i, 300), i, i))
		// The second batch leaves the sparse first segment once its
		// successor is prepared: wait for that, so that records 2 to 4
		// share a segment (not always so when the preparer was slow).
		for i == 1 && len(w.prepDone) == 0 {
			runtime.Gosched()
		}
	}
	require.Equal(t, uint64(2), w.current().Seq)
	crashed := crash(t, w, fs)
	seg := w.current()
	var offs []int64
	_, err = Scan(testOptions(crashed), Bounds{}, 0, func(_ Segment, off int64, _ []byte) error {
		offs = append(offs, off)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, offs, 4)

	f, err := crashed.OpenReadWrite("wal/"+seg.Name(), vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	defer f.Close()
	// The last record, one full chunk: make its synced offset stale (the
	// previous record's start) and reseal it.
	last := offs[3]
	h := make([]byte, chunkHeader+16+300+HeaderRoom)
	_, err = f.ReadAt(h, last)
	require.NoError(t, err)
	require.Equal(t, byte(walSyncFull), h[6])
	length := int(binary.LittleEndian.Uint16(h[4:]))
	binary.LittleEndian.PutUint64(h[11:], uint64(offs[2]))
	c := crc32.Checksum(h[6:chunkHeader+length], castagnoli)
	binary.LittleEndian.PutUint32(h, (c>>15|c<<17)+0xa282ead8)
	_, err = f.WriteAt(h[:chunkHeader+length], last)
	require.NoError(t, err)
	res, err := Scan(testOptions(crashed), Bounds{}, 0, func(Segment, int64, []byte) error { return nil })
	require.NoError(t, err, "resealed, the log still reads")
	require.Equal(t, uint64(4), res.Last)

	b := []byte{0}
	_, err = f.ReadAt(b, offs[2]+chunkHeader+50)
	require.NoError(t, err)
	b[0] ^= 0x10
	_, err = f.WriteAt(b, offs[2]+chunkHeader+50)
	require.NoError(t, err)
	_, err = Scan(testOptions(crashed), Bounds{}, 0, func(Segment, int64, []byte) error { return nil })
	var ce *CorruptError
	require.ErrorAs(t, err, &ce, "the record after the damage proves it was synced")
	require.Equal(t, offs[2], ce.Offset)
}
