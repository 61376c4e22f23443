package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/vmihailenco/msgpack/v5"
)

// formatVersion is the directory format this package writes (the meta
// record's). Version 3 moved the WAL out of pebble into its own segment
// files (wal/); version 2 made snapshots fuzzy; version 1 had exact
// snapshots. This build opens versions 1 and 2 by migrating them (see
// migrate.go): their WAL batches are copied into segments, then the meta
// record says 3, so that an older build refuses the directory from then on.
const (
	formatVersion   = 3
	formatVersionV2 = 2
	formatVersionV1 = 1
)

// Snapshot manifest versions: 2 is fuzzy (TxEnd), 1 exact.
const (
	manifestVersion   = 2
	manifestVersionV1 = 1
)

// readableFormat reports whether this build reads format version v.
func readableFormat(v int) bool {
	return v == formatVersion || v == formatVersionV2 || v == formatVersionV1
}

// meta is the directory's identity, written once when the directory is
// created.
type meta struct {
	FormatVersion int    `msgpack:"format_version"`
	MaxAccounts   uint64 `msgpack:"max_accounts"`
	Fingerprint   uint32 `msgpack:"config_fingerprint"`
	CreatedUnixNs int64  `msgpack:"created_unix_ns"`
}

// fingerprint is a checksum of the settings that fix the on-disk state
// (format version and MaxAccounts). It is stored in meta so that a tool can
// tell at a glance whether a directory matches a configuration; Open checks
// the fields one by one first, for a clearer error.
func fingerprint(maxAccounts uint64) uint32 { return fingerprintOf(formatVersion, maxAccounts) }

func fingerprintOf(version int, maxAccounts uint64) uint32 {
	s := fmt.Sprintf("lanework-ledger format=%d max_accounts=%d", version, maxAccounts)
	return crc32.Checksum([]byte(s), castagnoli)
}

// manifest describes one persisted snapshot. Its chunks were read from the
// readable balances while the Snapshotter kept applying (a fuzzy snapshot):
// the dedup window is the one after transaction TxID, and each balance is
// the account's balance after TxID or after one of its entries in
// (TxID, TxEnd]. Recovery loads the chunks and replays the WAL from TxID+1
// setting each entry's resulting balance; from TxEnd on the state is exact.
// A format 1 manifest has no TxEnd: its snapshot is exact (TxEnd = TxID).
type manifest struct {
	FormatVersion int    `msgpack:"format_version"`
	TxID          uint64 `msgpack:"tx_id"`
	TxEnd         uint64 `msgpack:"tx_end"`
	MaxAccounts   uint64 `msgpack:"max_accounts"`
	ChunkAccounts uint64 `msgpack:"chunk_accounts"`
	Chunks        uint32 `msgpack:"chunks"`
	DedupWindow   uint64 `msgpack:"dedup_window"`
	Refs          uint64 `msgpack:"refs"`
	CreatedUnixNs int64  `msgpack:"created_unix_ns"`
}

var errChecksum = errors.New("checksum mismatch")

// sealRecord returns crc32c(body) ++ body.
func sealRecord(body []byte) []byte {
	out := make([]byte, 4, 4+len(body))
	binary.LittleEndian.PutUint32(out, crc32.Checksum(body, castagnoli))
	return append(out, body...)
}

// openRecord verifies and strips the checksum added by sealRecord.
func openRecord(val []byte) ([]byte, error) {
	if len(val) < 4 {
		return nil, fmt.Errorf("%d-byte record: %w", len(val), errChecksum)
	}
	if crc32.Checksum(val[4:], castagnoli) != binary.LittleEndian.Uint32(val) {
		return nil, errChecksum
	}
	return val[4:], nil
}

func encodeMsgpack(v any) ([]byte, error) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return nil, err
	}
	return sealRecord(b), nil
}

// decodeMeta and decodeManifest verify and decode their records; they never
// panic on arbitrary input.
func decodeMeta(val []byte) (meta, error) {
	var m meta
	body, err := openRecord(val)
	if err == nil {
		err = msgpack.Unmarshal(body, &m)
	}
	return m, err
}

func decodeManifest(val []byte) (manifest, error) {
	var m manifest
	body, err := openRecord(val)
	if err == nil {
		err = msgpack.Unmarshal(body, &m)
	}
	return m, err
}
