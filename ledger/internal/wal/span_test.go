package wal

import (
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// spanRecord is one batch record written, where LastRecord put it.
type spanRecord struct {
	seg   Segment
	start int64
	rec   []byte // the payload, its type byte included
}

// writeSpanLog writes batches of many sizes (some of several chunks, some
// with a middle chunk, one starting where its block has room for a chunk
// header only) to 1 MiB segments, closes the log and returns them.
func writeSpanLog(t *testing.T, fs vfs.FS) []spanRecord {
	t.Helper()
	opts := testOptions(fs)
	opts.SegmentSize = 1 << 20
	w, err := Create(opts, nil, 1)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(21, 19))
	var recs []spanRecord
	next, tight := uint64(1), false
	for i := range 60 {
		size := 1 + rng.IntN(80_000)
		if i%7 == 3 {
			size = 1 + rng.IntN(200)
		}
		// Until one record starts so: end a record where the next one's
		// first chunk has room for its header only (a zero-byte first
		// chunk).
		if pos := w.lw.Size() % blockSize; !tight && i > 10 && pos+2*chunkHeader+HeaderRoom+16 < blockSize {
			size = int(blockSize - pos - 2*chunkHeader - HeaderRoom - 16)
		}
		b := batch(next, next, size)
		for j := HeaderRoom + 16; j < len(b); j++ {
			b[j] = byte(rng.Uint32())
		}
		require.NoError(t, w.Append(b, next, next))
		seg, start := w.LastRecord()
		recs = append(recs, spanRecord{seg: seg, start: start, rec: b})
		// Done once a record starts there: a rollover (its timing is the
		// preparer's) may put the record after a tight end in a new
		// segment, and then the next record tries again.
		tight = tight || start%blockSize == blockSize-chunkHeader
		next++
	}
	require.True(t, tight)
	require.NoError(t, w.Close())
	return recs
}

func openSegment(t *testing.T, fs vfs.FS, seg Segment) vfs.File {
	t.Helper()
	f, err := fs.Open(fs.PathJoin("wal", seg.Name()))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// Every span of every record reads back as written, across chunk
// boundaries too, and PayloadOffset places every byte where the file has it.
func TestReadSpan(t *testing.T) {
	fs := vfs.NewMem()
	recs := writeSpanLog(t, fs)
	rng := rand.New(rand.NewPCG(1, 2))
	var zeroRoom, middle, crossings int
	for _, r := range recs {
		f := openSegment(t, fs, r.seg)
		n := int64(len(r.rec))
		require.Equal(t, byte(typeBatch), r.rec[0])
		if r.start%blockSize == blockSize-chunkHeader {
			zeroRoom++
		}
		if n > 2*(blockSize-chunkHeader) {
			middle++
		}
		// Every byte where PayloadOffset says.
		one := make([]byte, 1)
		for k := int64(0); k < n; k += 1 + int64(rng.IntN(97)) {
			_, err := f.ReadAt(one, PayloadOffset(r.start, k))
			require.NoError(t, err)
			require.Equal(t, r.rec[k], one[0], "record at %d, byte %d", r.start, k)
		}
		spans := [][2]int64{{0, n}, {n - 1, 1}, {0, 0}}
		// The spans around each chunk boundary of the record.
		for k := int64(1); k < n; k++ {
			if PayloadOffset(r.start, k) != PayloadOffset(r.start, k-1)+1 {
				spans = append(spans, [2]int64{k - 1, 2}, [2]int64{max(0, k-40), min(n, k+40) - max(0, k-40)})
				crossings++
			}
		}
		for range 20 {
			from := rng.Int64N(n)
			spans = append(spans, [2]int64{from, 1 + rng.Int64N(n-from)})
		}
		for _, sp := range spans {
			got, err := ReadSpan(f, r.seg.Name(), r.seg.Seq, r.start, sp[0], sp[1], []byte("x"))
			require.NoError(t, err, "record at %d, span %v", r.start, sp)
			require.Equal(t, append([]byte("x"), r.rec[sp[0]:sp[0]+sp[1]]...), got)
		}
		// Past the record's end.
		_, err := ReadSpan(f, r.seg.Name(), r.seg.Seq, r.start, n-1, 2, nil)
		requireSpanCorrupt(t, err, r.seg.Name(), r.start, "holds no bytes")
		// Read as another segment's (a recycled file's old chunks).
		_, err = ReadSpan(f, r.seg.Name(), r.seg.Seq+1, r.start, 0, 1, nil)
		// (A zero-byte first chunk is not read: byte 0 is in the next.)
		firstRead := r.start
		if p := PayloadOffset(r.start, 0); p&^(blockSize-1) != r.start&^(blockSize-1) {
			firstRead = p &^ (blockSize - 1)
		}
		requireSpanCorrupt(t, err, r.seg.Name(), firstRead, "not of segment")
	}
	require.Positive(t, zeroRoom, "a record whose first chunk holds nothing")
	require.Positive(t, middle, "records with a middle chunk")
	require.Positive(t, crossings)
}

// Damage in a chunk the span reads is a *CorruptError naming the segment
// and the chunk's offset; damage in a chunk it does not read is not seen.
func TestReadSpanDamage(t *testing.T) {
	fs := vfs.NewMem()
	recs := writeSpanLog(t, fs)
	var r spanRecord
	for _, r = range recs {
		if int64(len(r.rec)) > 2*(blockSize-chunkHeader) {
			break // a record of three chunks or more
		}
	}
	n := int64(len(r.rec))
	// Damage one payload byte of the record's second chunk.
	k := n / 2
	at := PayloadOffset(r.start, k)
	chunk := at &^ (blockSize - 1)
	require.Greater(t, chunk, r.start)
	name := fs.PathJoin("wal", r.seg.Name())
	f, err := fs.OpenReadWrite(name, vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	b := make([]byte, 1)
	_, err = f.ReadAt(b, at)
	require.NoError(t, err)
	b[0] ^= 0x40
	_, err = f.WriteAt(b, at)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	rf := openSegment(t, fs, r.seg)
	_, err = ReadSpan(rf, r.seg.Name(), r.seg.Seq, r.start, k, 1, nil)
	requireSpanCorrupt(t, err, r.seg.Name(), chunk, "checksum")
	_, err = ReadSpan(rf, r.seg.Name(), r.seg.Seq, r.start, 0, n, nil)
	requireSpanCorrupt(t, err, r.seg.Name(), chunk, "checksum")
	got, err := ReadSpan(rf, r.seg.Name(), r.seg.Seq, r.start, 0, 16, nil)
	require.NoError(t, err, "the first chunk is intact")
	require.Equal(t, r.rec[:16], got)

	// A start that is not a record's.
	_, err = ReadSpan(rf, r.seg.Name(), r.seg.Seq, r.start+1, 0, 1, nil)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	_, err = ReadSpan(rf, r.seg.Name(), r.seg.Seq, blockSize-chunkHeader+1, 0, 1, nil)
	requireSpanCorrupt(t, err, r.seg.Name(), blockSize-chunkHeader+1, "no record span")

	// A segment cut short inside the record.
	short := &io.SectionReader{}
	*short = *io.NewSectionReader(rf, 0, chunk+5)
	_, err = ReadSpan(short, r.seg.Name(), r.seg.Seq, r.start, k, 1, nil)
	requireSpanCorrupt(t, err, r.seg.Name(), chunk, "ends inside")
}

func requireSpanCorrupt(t *testing.T, err error, file string, off int64, reason string) {
	t.Helper()
	var ce *CorruptError
	require.True(t, errors.As(err, &ce), "want a *CorruptError, got %v", err)
	require.Equal(t, file, ce.File)
	require.Equal(t, off, ce.Offset)
	require.Contains(t, ce.Reason, reason)
}

// BenchmarkReadSpan reads one block's worth of transactions (256 of
// ~70 bytes) out of an 870 KB batch record, as a group commit under load
// writes it, from a segment in the page cache: the read a reference in
// place of a copied block would cost.
func BenchmarkReadSpan(b *testing.B) {
	fs := vfs.Default
	opts := testOptions(fs)
	opts.Dir = b.TempDir()
	opts.SegmentSize = 4 << 20
	w, err := Create(opts, nil, 1)
	require.NoError(b, err)
	rec := batch(1, 1, 870_000)
	require.NoError(b, w.Append(rec, 1, 1))
	seg, start := w.LastRecord()
	require.NoError(b, w.Close())
	f, err := fs.Open(fs.PathJoin(opts.Dir, seg.Name()))
	require.NoError(b, err)
	defer f.Close()
	const span = 256 * 70
	buf := make([]byte, 0, span+blockSize)
	rng := rand.New(rand.NewPCG(3, 4))
	b.SetBytes(span)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		from := 1 + rng.Int64N(int64(len(rec))-span-1)
		if buf, err = ReadSpan(f, seg.Name(), seg.Seq, start, from, span, buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
