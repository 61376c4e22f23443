package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/vmihailenco/msgpack/v5"
)

// formatVersion is the directory format this package writes (the meta
// record's). Version 5 journals a transfer's fields. Version 4 has created accounts (sparse ids, a ledger, flags
// and four columns each; WAL entries name a column, create_account
// records, accounts chunks in snapshots). Version 3 moved the WAL out of
// pebble into its own segment files (wal/); version 2 made snapshots fuzzy;
// version 1 had exact snapshots. Versions 1 to 3 have dense accounts with
// one balance and no account records: this build refuses them with
// ErrIncompatible and a message saying how to move their balances (see
// oldFormatError); it never rewrites them.
const (
	formatVersion = 5
	// formatVersionV4 wrote no transfer fields (ledger, code, user_data,
	// flags, pending id, timeout) in its WAL records. Its records decode
	// as they are (see walcodec.go); Open rewrites the meta record as
	// format 5 before it appends, so that a format 4 build refuses the
	// directory instead of misreading a record.
	formatVersionV4 = 4
	// formatVersionV3 is the last format with dense accounts.
	formatVersionV3 = 3
)

// manifestVersion is the snapshot manifest's: 4 adds the pending book's
// chunk (a version 3 snapshot has none: no transfer was pending then), 3
// the accounts count (2 was fuzzy with TxEnd, 1 exact).
const (
	manifestVersion   = 4
	manifestVersionV3 = 3
)

// readableFormat reports whether this build reads format version v.
func readableFormat(v int) bool { return v == formatVersion || v == formatVersionV4 }

// oldFormatError is Open's refusal of a directory of format v < 4.
func oldFormatError(dir string, v int) error {
	return fmt.Errorf("%w: %s has format %d (dense accounts, one balance each); this build reads format %d (created accounts) and does not convert it: "+
		"with the build that wrote it, run `ledger dump` to list its balances, then create the accounts (`ledger account create`) "+
		"and deposit the balances into a new directory", ErrIncompatible, dir, v, formatVersion)
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
// The cell chunks hold 4 cells per account of MaxAccounts (see
// accountTable), the accounts chunks slots 1 .. Accounts-1.
type manifest struct {
	FormatVersion int    `msgpack:"format_version"`
	TxID          uint64 `msgpack:"tx_id"`
	TxEnd         uint64 `msgpack:"tx_end"`
	MaxAccounts   uint64 `msgpack:"max_accounts"`
	Accounts      uint64 `msgpack:"accounts"` // slots in use after TxID, the system account's included
	ChunkAccounts uint64 `msgpack:"chunk_accounts"`
	Chunks        uint32 `msgpack:"chunks"`
	DedupWindow   uint64 `msgpack:"dedup_window"`
	Refs          uint64 `msgpack:"refs"`
	CreatedUnixNs int64  `msgpack:"created_unix_ns"`
}

var errChecksum = errors.New("checksum mismatch")

// sealRecord returns crc32c(body) ++ body. A record built after 4
// reserved bytes is sealed without a copy by sealInPlace.
func sealRecord(body []byte) []byte {
	out := append(make([]byte, 4, 4+len(body)), body...)
	sealInPlace(out)
	return out
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
