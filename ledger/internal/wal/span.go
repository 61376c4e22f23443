package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// Reading part of a record in place. A record of pebble's WAL-sync format
// is laid out by arithmetic alone: its first chunk starts where the record
// does (the writer pads a block whose tail cannot hold a chunk header, so
// a record never starts there), and every chunk but the last fills its
// 32 KiB block to the end; the next chunk starts at the next block with
// its own 19-byte header. So the file offset of any payload byte follows
// from the record's start, and a reader of a few transactions of a batch
// reads only the chunks that hold them, checking each one's CRC, type and
// log number, without reading the record from its start.
//
// This is what an index holding references into kept segments needs
// instead of copies of the transactions' encodings (docs/ledger.md, "WAL
// references instead of copied blocks"): the segment, the record's start,
// and the payload range of a block's transactions.

// PayloadOffset is the file offset of payload byte k (the record type
// byte is byte 0) of the record whose first chunk starts at start.
func PayloadOffset(start, k int64) int64 {
	inBlock := start % blockSize
	first := blockSize - inBlock - chunkHeader // the first chunk's payload room
	if k < first {
		return start + chunkHeader + k
	}
	k -= first
	room := int64(blockSize - chunkHeader)
	return start - inBlock + (1+k/room)*blockSize + chunkHeader + k%room
}

// ReadSpan appends payload bytes [from, from+n) of the record of segment
// seq (in file, named file for errors) whose first chunk starts at start,
// and returns dst. It reads only the chunks that hold those bytes, whole,
// and checks each: its CRC, the segment's log number, a type that fits its
// place in the record (the first chunk full or first; a later one middle
// or last), a length that fills its block unless it is the record's last,
// and that the record reaches from+n. Any failure is a *CorruptError
// naming the file and the offset of the chunk (or of the record, for a
// span it does not hold). dst's spare room is its scratch: with room for
// the span and one block (32 KiB) beyond it, ReadSpan allocates nothing.
func ReadSpan(r io.ReaderAt, file string, seq uint64, start, from, n int64, dst []byte) ([]byte, error) {
	if start < 0 || start%blockSize > blockSize-chunkHeader || from < 0 || n < 0 {
		return dst, &CorruptError{File: file, Offset: start, Reason: fmt.Sprintf("no record span at %d, payload bytes %d+%d", start, from, n)}
	}
	for at, end := from, from+n; at < end; {
		// The chunk holding payload byte at: its offset, its payload's
		// first byte, and whether it is the record's first chunk.
		p := PayloadOffset(start, at)
		chunk, first := start, true
		if p&^(blockSize-1) != start&^(blockSize-1) {
			chunk, first = p&^(blockSize-1), false
		}
		base := at - (p - chunk - chunkHeader) // payload index of the chunk's first byte
		// The chunk is read into dst's spare room, checked, and the
		// span's bytes moved down to dst's end.
		dst = slices.Grow(dst, blockSize)
		blk := dst[len(dst) : len(dst)+int(blockSize-chunk%blockSize)]
		got, err := r.ReadAt(blk, chunk)
		if err != nil && !errors.Is(err, io.EOF) {
			return dst, fmt.Errorf("wal: read %s: %w", file, err)
		}
		blk = blk[:got]
		if len(blk) < chunkHeader {
			return dst, &CorruptError{File: file, Offset: chunk, Reason: "segment ends inside a record"}
		}
		t, length := blk[6], int64(binary.LittleEndian.Uint16(blk[4:]))
		switch {
		case chunkHeader+length > int64(len(blk)):
			return dst, &CorruptError{File: file, Offset: chunk, Reason: fmt.Sprintf("chunk of %d bytes past its block", length)}
		case chunkSum(blk[6:chunkHeader+length]) != binary.LittleEndian.Uint32(blk):
			return dst, &CorruptError{File: file, Offset: chunk, Reason: "chunk checksum mismatch"}
		case binary.LittleEndian.Uint32(blk[7:]) != uint32(seq):
			return dst, &CorruptError{File: file, Offset: chunk, Reason: fmt.Sprintf("chunk of log %d, not of segment %d", binary.LittleEndian.Uint32(blk[7:]), seq)}
		case first && t != walSyncFull && t != walSyncFirst:
			return dst, &CorruptError{File: file, Offset: chunk, Reason: fmt.Sprintf("chunk type %d where a record starts", t)}
		case !first && t != walSyncMiddle && t != walSyncLast:
			return dst, &CorruptError{File: file, Offset: chunk, Reason: fmt.Sprintf("chunk type %d where a record goes on", t)}
		}
		last := t == walSyncFull || t == walSyncLast
		if !last && chunkHeader+length != int64(len(blk)) {
			return dst, &CorruptError{File: file, Offset: chunk, Reason: fmt.Sprintf("chunk of %d bytes does not fill its block, and the record goes on", length)}
		}
		stop := min(end, base+length)
		if at >= base+length || last && stop < end {
			return dst, &CorruptError{File: file, Offset: start, Reason: fmt.Sprintf("record of %d payload bytes holds no bytes %d..%d", base+length, from, end-1)}
		}
		dst = dst[:len(dst)+copy(blk, blk[chunkHeader+at-base:chunkHeader+stop-base])]
		at = stop
	}
	return dst, nil
}

// walSyncMiddle is the chunk type of a record's middle parts.
const walSyncMiddle = walSyncFirst + 1

// chunkSum is a chunk's checksum as pebble stores it: the CRC32C of its
// type, log number, synced offset and payload, masked.
func chunkSum(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// LastRecord is where the record of the last Append starts: its segment
// and the file offset of its first chunk. It belongs to the appending
// goroutine, as Append does.
func (w *Writer) LastRecord() (Segment, int64) { return w.cur, w.lastStart }
