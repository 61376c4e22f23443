package ledger

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lanework/lanework/ledger/internal/offline"
)

// openOffline opens a closed ledger directory read-only for the offline
// tools (package inspect) and returns its meta record. Nothing on disk changes: pebble replays
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

// The offline tools of package inspect reach the engine through
// internal/offline.
func init() {
	offline.Verify = func(fs vfs.FS, dir string) (*offline.Report, error) {
		rep, err := verifyDir(fs, dir)
		if rep == nil {
			return nil, err
		}
		return rep.export(), err
	}
	offline.Dump = dumpDir
	offline.Recover = func(fs vfs.FS, dir string, after uint64) (*offline.Truncation, error) {
		t, err := truncateDir(fs, dir, after)
		if err != nil {
			return nil, err
		}
		out := t.export()
		return &out, nil
	}
}

func (r *verifyReport) export() *offline.Report {
	out := &offline.Report{MaxAccounts: r.MaxAccounts, FirstTx: uint64(r.FirstTx), LastTx: uint64(r.LastTx),
		Batches: r.Batches, Transactions: r.Transactions, FromZero: r.FromZero, KeptSegments: r.KeptSegments, RefBlocks: r.RefBlocks}
	if t := r.TornTail; t != nil {
		out.TornTail = &offline.Torn{File: t.File, Offset: t.Offset, Dropped: t.Dropped, LastKept: uint64(t.LastKept)}
	}
	for _, s := range r.Snapshots {
		out.Snapshots = append(out.Snapshots, offline.Snapshot{TxID: uint64(s.TxID), Valid: s.Valid, Replayed: s.Replayed})
	}
	for _, f := range r.Findings {
		out.Findings = append(out.Findings, f)
	}
	for _, t := range r.truncations {
		out.Truncations = append(out.Truncations, t.export())
	}
	return out
}
