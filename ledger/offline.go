package ledger

import (
	"errors"
	"fmt"
	"slices"
	"strings"

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
	// Look for pebble's manifest marker first: pebble.Open, even read-only,
	// creates its LOCK file, and the offline tools write nothing.
	names, err := fs.List(dir)
	if err != nil {
		return nil, meta{}, fmt.Errorf("ledger: %w", err)
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "marker.manifest.") }) {
		return nil, meta{}, fmt.Errorf("%w: %s holds no pebble store", ErrNoLedger, dir)
	}
	db, err := pebble.Open(dir, &pebble.Options{FS: fs, ReadOnly: true, Logger: quietLogger{}})
	if err != nil {
		return nil, meta{}, openError(dir, " read-only", err)
	}
	m, err := readMeta(db)
	if err != nil {
		db.Close()
		return nil, meta{}, err
	}
	return db, m, nil
}

func readMeta(db *pebble.DB) (meta, error) {
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
	if !readableFormat(m.FormatVersion) {
		return meta{}, fmt.Errorf("%w: format version %d, this build reads %d and %d", ErrIncompatible, m.FormatVersion, formatVersionV1, formatVersion)
	}
	if m.MaxAccounts < 2 || m.MaxAccounts > MaxAccountsLimit || m.Fingerprint != fingerprintOf(m.FormatVersion, m.MaxAccounts) {
		return meta{}, &CorruptError{Key: metaKey, Reason: fmt.Sprintf("MaxAccounts %d does not match fingerprint %08x", m.MaxAccounts, m.Fingerprint)}
	}
	return m, nil
}
