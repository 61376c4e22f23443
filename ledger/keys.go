package ledger

import "encoding/binary"

// Pebble key scheme. Every key starts with a one-byte prefix; ids are
// big-endian so that byte order is id order.
//
//	"M"                      meta record (msgpack + CRC32C): format version, MaxAccounts
//	"N"                      sequence number of the newest WAL segment created (u64 + CRC32C)
//	"O"                      sequence number of the oldest WAL segment retention keeps (u64 + CRC32C)
//	"G" + segment seq        replica hash chain of every batch before the segment (u64 + CRC32C; replicate.go)
//	"W" + first tx id        format 1 and 2 only: WAL batch (such directories are refused)
//	"S" + tx id              snapshot manifest (msgpack + CRC32C) of the state after tx id
//	"C" + tx id + chunk no.  snapshot chunk (binary + CRC32C): the cells, from 0; the dedup window
//	"A" + slot               account record (32 bytes + CRC32C), written once when the creation is applied
//	"D" + first tx id        durable idempotency index: a run of (tx id, user ref) (refindex.go)
//	"F"                      first tx whose ref the index holds, if it was on ever since (u64 + CRC32C)
//	"R" + Unix ns            a truncation by ledger recover (truncate.go)
//	"z", "t", "P", "h", "p", "I"  the history and query indexes (historyindex.go), in their own
//	                         store, index/; here only in a directory from before it (dropLegacyIndex),
//	                         whose blocks are "T", as builds before "z" wrote them
//
// TestKeyPrefixesDistinct checks that no two of these share a byte.
const (
	prefixMeta       = 'M'
	prefixAccount    = 'A'
	prefixNewest     = 'N'
	prefixOldest     = 'O'
	prefixHash       = 'G'
	prefixWAL        = 'W'
	prefixSnapshot   = 'S'
	prefixChunk      = 'C'
	prefixDedup      = 'D'
	prefixDedupFrom  = 'F'
	prefixTruncation = 'R'
)

var (
	metaKey      = []byte{prefixMeta}
	newestSegKey = []byte{prefixNewest}
	oldestSegKey = []byte{prefixOldest}
	dedupFromKey = []byte{prefixDedupFrom}
)

func idKey(prefix byte, id uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefix
	binary.BigEndian.PutUint64(k[1:], id)
	return k
}

func chunkKey(snap uint64, chunk uint32) []byte {
	k := make([]byte, 13)
	k[0] = prefixChunk
	binary.BigEndian.PutUint64(k[1:], snap)
	binary.BigEndian.PutUint32(k[9:], chunk)
	return k
}

// parseIDKey returns the id of a "W"/"S" key, or false if k is malformed.
func parseIDKey(prefix byte, k []byte) (uint64, bool) {
	if len(k) != 9 || k[0] != prefix {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[1:]), true
}

// prefixEnd is the exclusive upper bound of all keys with prefix p.
func prefixEnd(p byte) []byte { return []byte{p + 1} }
