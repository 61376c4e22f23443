package ledger

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// openOffline opens a closed ledger directory read-only for the offline
// tools and returns its meta record. Nothing on disk changes: pebble replays
// its own log into memory only.
func openOffline(fs vfs.FS, dir string) (*pebble.DB, meta, error) {
	if fs == nil {
		fs = vfs.Default
	}
	if _, err := fs.Stat(dir); err != nil {
		return nil, meta{}, fmt.Errorf("ledger: %w", err)
	}
	// The checks Open makes before it opens pebble read-write.
	db, err := openChecked(fs, dir)
	if err != nil {
		return nil, meta{}, err
	}
	if db == nil {
		return nil, meta{}, fmt.Errorf("%w: %s holds no pebble store", ErrNoLedger, dir)
	}
	m, err := readMeta(db, dir)
	if err != nil {
		db.Close()
		return nil, meta{}, err
	}
	return db, m, nil
}

func readMeta(db *pebble.DB, dir string) (meta, error) {
	val, closer, err := db.Get(metaKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return meta{}, &CorruptError{Key: metaKey, Reason: "meta record missing: not a ledger directory"}
	}
	if err != nil {
		return meta{}, fmt.Errorf("ledger: read meta: %w", err)
	}
	m, err := decodeMeta(val)
	closer.Close()
	if err != nil {
		return meta{}, &CorruptError{Key: metaKey, Reason: err.Error()}
	}
	if m.FormatVersion >= 1 && m.FormatVersion <= formatVersionV3 {
		return meta{}, oldFormatError(dir, m.FormatVersion)
	}
	if !readableFormat(m.FormatVersion) {
		return meta{}, fmt.Errorf("%w: format version %d, this build reads %d", ErrIncompatible, m.FormatVersion, formatVersion)
	}
	if m.MaxAccounts < 2 || m.MaxAccounts > MaxAccountsLimit || m.Fingerprint != fingerprintOf(m.FormatVersion, m.MaxAccounts) {
		return meta{}, &CorruptError{Key: metaKey, Reason: fmt.Sprintf("MaxAccounts %d does not match fingerprint %08x", m.MaxAccounts, m.Fingerprint)}
	}
	return m, nil
}
