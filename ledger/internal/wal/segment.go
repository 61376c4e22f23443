package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
)

// Record types: the first byte of every record payload.
const (
	typeHeader = 'H'
	typeBatch  = 'B'
)

// HeaderRoom is the number of bytes Append's caller leaves free at the start
// of a batch record for the record type.
const HeaderRoom = 1

const (
	magic      = "lwwal\x00\x00\x01"
	headerLen  = 1 + 8 + 24
	prepareTmp = "prepare.tmp"
	recycleTmp = "recycle.tmp"
	suffix     = ".wal"
	// blockSize and chunkHeader are pebble's record format: 32 KiB blocks,
	// and the WAL-sync chunk header (CRC, length, type, log number, synced
	// offset).
	blockSize   = 32 << 10
	chunkHeader = 19
)

// MinSegmentSize is the smallest segment a Writer accepts.
const MinSegmentSize = 64 << 10

// Segment names one segment file.
type Segment struct {
	Seq   uint64 // sequence number, contiguous across the log
	First uint64 // id of its first transaction
}

// Name is the segment's file name inside the log directory.
func (s Segment) Name() string { return fmt.Sprintf("%016x-%016x%s", s.Seq, s.First, suffix) }

func parseName(name string) (Segment, bool) {
	var s Segment
	if len(name) != 16+1+16+len(suffix) || !strings.HasSuffix(name, suffix) || name[16] != '-' {
		return s, false
	}
	if _, err := fmt.Sscanf(name[:33], "%016x-%016x", &s.Seq, &s.First); err != nil {
		return s, false
	}
	return s, s.Name() == name
}

// List returns the segments in dir in sequence order, and the names it does
// not know (prepare.tmp and recycle.tmp excluded). A missing directory holds no segments.
func List(fs vfs.FS, dir string) (segs []Segment, unknown []string, err error) {
	if _, err := fs.Stat(dir); errors.Is(err, iofs.ErrNotExist) {
		return nil, nil, nil
	}
	names, err := fs.List(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("wal: %w", err)
	}
	for _, n := range names {
		if s, ok := parseName(n); ok {
			segs = append(segs, s)
		} else if n != prepareTmp && n != recycleTmp {
			unknown = append(unknown, n)
		}
	}
	slices.SortFunc(segs, func(a, b Segment) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	slices.Sort(unknown)
	return segs, unknown, nil
}

func encodeHeader(dst []byte, seg Segment, size int64) []byte {
	dst = append(dst, typeHeader)
	dst = append(dst, magic...)
	dst = binary.LittleEndian.AppendUint64(dst, seg.Seq)
	dst = binary.LittleEndian.AppendUint64(dst, seg.First)
	return binary.LittleEndian.AppendUint64(dst, uint64(size))
}

func decodeHeader(p []byte) (seg Segment, size int64, err error) {
	if len(p) != headerLen || p[0] != typeHeader || string(p[1:9]) != magic {
		return seg, 0, errors.New("first record is not a segment header")
	}
	seg.Seq = binary.LittleEndian.Uint64(p[9:])
	seg.First = binary.LittleEndian.Uint64(p[17:])
	return seg, int64(binary.LittleEndian.Uint64(p[25:])), nil
}

// newReader and newLogWriter pass the segment's sequence number as pebble's
// log number, whose type lives in an internal package: it is inferred from
// the function's own parameter type.
func newReader(r io.Reader, seq uint64) *record.Reader { return callReader(record.NewReader, r, seq) }

func callReader[N ~uint64](f func(io.Reader, N) *record.Reader, r io.Reader, seq uint64) *record.Reader {
	return f(r, N(seq))
}

// newLogWriter returns a LogWriter in the WAL-sync chunk format. The
// latency histogram is not optional: LogWriter records the synced offset
// that chunk headers promise only when it has one, and that promise is what
// tells damage from a torn tail.
func newLogWriter(w io.Writer, seq uint64, fsyncLatency prometheus.Histogram) *record.LogWriter {
	return callWriter(record.NewLogWriter, w, seq, record.LogWriterConfig{
		WriteWALSyncOffsets: func() bool { return true },
		WALFsyncLatency:     fsyncLatency,
	})
}

func callWriter[N ~uint64](f func(io.Writer, N, record.LogWriterConfig) *record.LogWriter, w io.Writer, seq uint64, c record.LogWriterConfig) *record.LogWriter {
	return f(w, N(seq), c)
}

// recordBound is the most file bytes a record of n payload bytes can take,
// block padding before it included.
func recordBound(n int) int64 {
	chunks := int64(n)/(blockSize-chunkHeader) + 1
	return int64(n) + chunks*chunkHeader + chunkHeader
}
