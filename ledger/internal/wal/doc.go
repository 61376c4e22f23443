// Package wal is the ledger's write-ahead log: numbered, preallocated,
// fixed-size segment files of checksummed records, one record per group
// commit, written with pebble's record package.
//
// # Files
//
// The log lives in its own directory (the ledger's wal/):
//
//	<seq:016x>-<first:016x>.wal   a segment: sequence number, id of its first transaction
//	prepare.tmp                   the next segment being prepared; never read
//	recycle.tmp                   a retired segment kept for reuse; never read
//
// Sequence numbers are contiguous from the oldest retained segment to the
// newest; retention removes whole segments from the oldest end only. A new
// segment is prepared under prepare.tmp, renamed to its final name, and the
// directory is synced before its first batch is written. Prepared means
// written out at the segment size, so that later writes change no file
// metadata and fdatasync suffices: a retired segment the Writer wrote out
// itself (retention renames the newest segment it retires to recycle.tmp
// when no spare waits, and the preparer renames that to prepare.tmp), or
// else zeros (O_DIRECT on Linux where the filesystem allows it) and a sync.
// Removing or retiring a segment also syncs the directory.
//
// With Options.Keep (the ledger's index/wal/, with its index on), every
// new segment is also hard-linked into that directory, and the directory
// synced, before its first batch: retention then unlinks only the log's
// name. A file with another link is never recycled; a Writer that keeps
// allocates its successors (fallocate on Linux) instead of writing zeros,
// and drops closed segments from the page cache (keep.go). A log that
// replaces another (the ledger's recover) starts at Options.FirstSeq, so
// that no name is used twice.
//
// # Segment layout
//
// A segment is a pebble record stream (record.LogWriter, WAL-sync chunk
// format: 32 KiB blocks of chunks, each chunk with a CRC32C of its type,
// log number, synced offset and payload; the log number is the segment's
// sequence number, low 32 bits). The file is exactly the size its header
// names; after the last record come an EOF trailer chunk once the segment
// was closed, and then zeros or, in a recycled file, the chunks of the
// segment it was before, whose log number differs. Every record payload starts with a type byte:
//
//	'H' header, the first record of every segment, 33 bytes:
//	    [1:9] magic "lwwal\x00\x00\x01", [9:17] seq, [17:25] first tx id,
//	    [25:33] segment size in bytes (all little-endian)
//	'B' batch: one group commit, the ledger's encoded batch (its own
//	    CRC32C, first tx id and count; see the ledger's walcodec.go)
//
// Batches hold contiguous transaction ids: the first batch of a segment
// starts at the header's first id, and every segment's batches end exactly
// one id before its successor's first.
//
// # Recovery rules
//
// Scan applies one rule set, used by the ledger's Open and by the offline
// verify alike:
//
//  1. A record that fails to read in the newest segment, when pebble's reader
//     proves nothing synced follows it (record.ErrUnexpectedEOF: no later
//     chunk of this segment promises a synced offset beyond it) and no
//     later chunk of this segment begins a record (the Writer syncs each
//     record before writing the next, so one would prove it), is a torn
//     tail: the scan ends before it and reports segment, offset, bytes
//     dropped (the chunks of this segment after it) and the last
//     transaction kept. A newest segment without one chunk of its own,
//     holding zeros or a retired segment's records (its header naming a
//     segment older than the oldest live one), was never written: unborn.
//  2. Any other damage is a *CorruptError naming the file, the offset and the
//     transaction range affected: a record that fails with valid synced data
//     after it, a bad header, a segment whose size differs from its header's,
//     a missing segment (a gap in sequence numbers, or fewer segments than
//     the ledger recorded), ids that skip or repeat, a batch whose own
//     checksum or structure fails, a segment that ends short of its
//     successor's first id, and names the package does not know.
//
// Scan only reads. Cutting the log at damage is the offline recover
// command's job (TruncateAfter), never Open's.
package wal
