package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/vmihailenco/msgpack/v5"
)

// formatVersion is the on-disk format this package writes and reads.
const formatVersion = 1

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
func fingerprint(maxAccounts uint64) uint32 {
	s := fmt.Sprintf("lanework-ledger format=%d max_accounts=%d", formatVersion, maxAccounts)
	return crc32.Checksum([]byte(s), castagnoli)
}

// manifest describes one persisted snapshot: the balances and dedup window
// after transaction TxID. Its chunks are written in the same pebble batch.
type manifest struct {
	FormatVersion int    `msgpack:"format_version"`
	TxID          uint64 `msgpack:"tx_id"`
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
