package ledger

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"regexp"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// openChecked opens the pebble store in dir read-only after checking it,
// before anything opens it read-write: pebble, opened read-write over a
// damaged MANIFEST or marker, rebuilds its version state and deletes the sst
// files it no longer names. The read-only open reads the marker and
// MANIFEST; every sst the MANIFEST names must exist at its recorded size;
// every key is read (each block's checksum); the newest OPTIONS file must
// parse. Damage is a *CorruptError; nothing is written or deleted. It
// returns nil and no error for a directory without a pebble store, which
// passes only if it holds no WAL segments either.
func openChecked(fs vfs.FS, dir string) (*pebble.DB, error) {
	names, err := fs.List(dir)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	for _, n := range []string{walNewDir, walOldDir} {
		if slices.Contains(names, n) {
			return nil, fmt.Errorf("%w: %s holds %s, left by an interrupted ledger recover: run it again with the same --truncate-after", ErrRecover, dir, n)
		}
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "marker.manifest.") }) {
		for _, n := range names {
			if strings.HasPrefix(n, "MANIFEST-") || strings.HasSuffix(n, ".sst") {
				return nil, &CorruptError{File: "marker.manifest.*", Reason: fmt.Sprintf("pebble's manifest marker is missing but %s is present", n)}
			}
		}
		if segs, _, err := listSegments(fs, dir); err != nil || len(segs) > 0 {
			if err == nil {
				err = &CorruptError{File: walDir + "/" + segs[0].Name(), Reason: "WAL segments without a pebble store: its marker and MANIFEST are missing"}
			}
			return nil, err
		}
		return nil, nil
	}
	if err := checkManifest(fs, dir, names); err != nil {
		return nil, err
	}
	// No table statistics: nothing here picks compactions, and Close
	// waits for their loading (tens of milliseconds after a flush).
	db, err := pebble.Open(dir, &pebble.Options{FS: fs, ReadOnly: true, DisableTableStats: true, Logger: quietLogger{}, EventListener: corruptionListener()})
	if err != nil {
		err = openError(dir, " read-only", err)
		if errors.Is(err, ErrLocked) {
			return nil, err
		}
		file := "MANIFEST"
		if m := sstRef.FindStringSubmatch(err.Error()); m != nil {
			file = m[1] + ".sst"
		}
		return nil, &CorruptError{File: file, Reason: "pebble store does not open read-only: " + err.Error()}
	}
	if err := checkOpenStore(fs, dir, db, names); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func checkOpenStore(fs vfs.FS, dir string, db *pebble.DB, names []string) error {
	levels, err := db.SSTables()
	if err != nil {
		return &CorruptError{File: "MANIFEST", Reason: err.Error()}
	}
	for _, level := range levels {
		for _, t := range level {
			name := fmt.Sprintf("%s.sst", t.BackingSSTNum)
			st, err := fs.Stat(fs.PathJoin(dir, name))
			switch {
			case err != nil:
				return &CorruptError{File: name, Reason: "sst named by the MANIFEST: " + err.Error()}
			case uint64(st.Size()) != t.Size && !t.Virtual:
				return &CorruptError{File: name, Offset: st.Size(), Reason: fmt.Sprintf("sst is %d bytes, the MANIFEST says %d", st.Size(), t.Size)}
			}
		}
	}
	it, err := db.NewIter(nil)
	if err != nil {
		return &CorruptError{File: "pebble store", Reason: err.Error()}
	}
	for ok := it.First(); ok; ok = it.Next() {
		_ = it.Value()
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return &CorruptError{File: "pebble store", Reason: "reading every key: " + err.Error()}
	}
	return checkOptionsFile(fs, dir, names)
}

// sstRef finds the sst a pebble open error names.
var sstRef = regexp.MustCompile(`(?:L\d+: |file )(\d{6})\b`)

// checkManifest reads every record of the MANIFEST the marker names. pebble
// stops at a damaged record without an error and forgets the files the
// edits after it named; opened read-write it would then delete them. So a
// damaged record anywhere, the last one included, is refused.
func checkManifest(fs vfs.FS, dir string, names []string) error {
	var name string
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, "marker.manifest."); ok {
			if i := strings.IndexByte(rest, '.'); i >= 0 {
				name = rest[i+1:]
			}
		}
	}
	f, err := fs.Open(fs.PathJoin(dir, name))
	if err != nil {
		return &CorruptError{File: name, Reason: "the MANIFEST the marker names: " + err.Error()}
	}
	defer f.Close()
	r := record.NewReader(f, 0)
	for {
		off := r.Offset()
		rec, err := r.Next()
		if err == nil {
			_, err = io.Copy(io.Discard, rec)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &CorruptError{File: name, Offset: off, Reason: "damaged MANIFEST record: " + err.Error()}
		}
	}
}

// checkOptionsFile parses the newest OPTIONS file strictly (pebble only
// checks a few of its fields for compatibility).
func checkOptionsFile(fs vfs.FS, dir string, names []string) error {
	var newest string
	for _, n := range names {
		if strings.HasPrefix(n, "OPTIONS-") && n > newest {
			newest = n
		}
	}
	if newest == "" {
		return nil
	}
	f, err := fs.Open(fs.PathJoin(dir, newest))
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	var o pebble.Options
	if err := o.Parse(string(data), nil); err != nil {
		return &CorruptError{File: newest, Reason: "OPTIONS does not parse: " + err.Error()}
	}
	return nil
}
