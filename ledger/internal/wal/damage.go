package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
)

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	zeroBlock  [blockSize]byte
)

// Chunk types of pebble's WAL-sync format: a whole record (full), or its
// first, middle and last part.
const (
	walSyncFull = 9 + iota
	walSyncFirst
	_ // middle
	walSyncLast
)

// laterSynced reports whether the segment holds, after off, a valid chunk of
// this segment that begins a record, or that promises a synced offset
// beyond off, and where. Such a chunk was written after the record at off
// had been synced (the Writer syncs every record before writing the next),
// so whatever is wrong at off is damage, not a torn write. The promise
// alone is not enough: pebble's LogWriter wakes a SyncRecord caller before
// it stores the new synced offset, so the record right after a synced one
// may still carry the offset before it. A torn record's own later chunks
// (middle, last) prove nothing and are not counted. pebble's reader checks
// only promises, and only from the next 32 KiB block on; chunks never cross
// blocks, so each block is scanned on its own, at every byte offset
// (alignment is lost after damage).
func laterSynced(f vfs.File, seq uint64, off, size int64) (bool, int64, error) {
	buf := make([]byte, blockSize)
	for blk := off &^ (blockSize - 1); blk < size; blk += blockSize {
		n := min(blockSize, size-blk)
		if _, err := f.ReadAt(buf[:n], blk); err != nil && err != io.EOF {
			return false, 0, fmt.Errorf("wal: %w", err)
		}
		b := buf[:n]
		if bytes.Equal(b, zeroBlock[:n]) {
			continue // preallocated, never written
		}
		start := int64(0)
		if blk < off {
			start = off - blk + 1
		}
		for i := start; i+chunkHeader <= n; i++ {
			t := b[i+6]
			if t < walSyncFull || t > walSyncLast || binary.LittleEndian.Uint32(b[i+7:]) != uint32(seq) {
				continue
			}
			length := int64(binary.LittleEndian.Uint16(b[i+4:]))
			begins := t == walSyncFull || t == walSyncFirst
			if i+chunkHeader+length > n || !begins && binary.LittleEndian.Uint64(b[i+11:]) <= uint64(off) {
				continue
			}
			c := crc32.Checksum(b[i+6:i+chunkHeader+length], castagnoli)
			if (c>>15|c<<17)+0xa282ead8 == binary.LittleEndian.Uint32(b[i:]) {
				return true, blk + i, nil
			}
		}
	}
	return false, 0, nil
}

// ownChunksEnd walks the chunks that start at off, in pebble's framing,
// while they carry this segment's log number (whatever their checksum: a
// torn write's chunks fail it) and fit their block, and returns where the
// walk stopped. What stops it is zeros (a fresh file), an earlier segment's
// chunk (a recycled file) or bytes that are no chunk header; a block's
// last bytes too short for a header are padding, as the writer leaves them.
func ownChunksEnd(f vfs.File, seq uint64, off, size int64) (int64, error) {
	var h [chunkHeader]byte
	end := off // past the last chunk of this segment found
	for at := off; at < size; {
		blkEnd := min(at&^(blockSize-1)+blockSize, size)
		if blkEnd-at < chunkHeader {
			at = blkEnd
			continue
		}
		if _, err := f.ReadAt(h[:], at); err != nil && err != io.EOF {
			return 0, fmt.Errorf("wal: %w", err)
		}
		length := int64(binary.LittleEndian.Uint16(h[4:]))
		if t := h[6]; t < walSyncFull || t > walSyncLast ||
			binary.LittleEndian.Uint32(h[7:]) != uint32(seq) || at+chunkHeader+length > blkEnd {
			break
		}
		at += chunkHeader + length
		end = at
	}
	return end, nil
}

// retiredHeader reports whether f starts with the intact header record of
// a segment older than oldest, the oldest live one: a retired segment
// recycled into f's place whose own header never became durable. A live
// segment's header there is a copy, not a recycled file.
func retiredHeader(f vfs.File, oldest uint64) (bool, error) {
	var b [chunkHeader + headerLen]byte
	if _, err := f.ReadAt(b[:], 0); err != nil && err != io.EOF {
		return false, fmt.Errorf("wal: %w", err)
	}
	if b[6] != walSyncFull || binary.LittleEndian.Uint16(b[4:]) != headerLen {
		return false, nil // not one full chunk of header length
	}
	c := crc32.Checksum(b[6:], castagnoli)
	if (c>>15|c<<17)+0xa282ead8 != binary.LittleEndian.Uint32(b[:]) {
		return false, nil
	}
	seg, _, err := decodeHeader(b[chunkHeader:])
	return err == nil && seg.Seq < oldest && binary.LittleEndian.Uint32(b[7:]) == uint32(seg.Seq), nil
}
