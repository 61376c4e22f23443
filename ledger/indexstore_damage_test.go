package ledger

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// TestIndexStoreDoesNotOpen: an index store that is damaged is removed and
// the index rebuilt from the WAL, answering as before; one that does not
// open for a reason of the host (here an I/O error opening its files) is
// left as it is, byte for byte, and Open fails with that error.
func TestIndexStoreDoesNotOpen(t *testing.T) {
	damages := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"OPTIONS garbled", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(pebbleFile(t, dir, "OPTIONS-", ""), []byte("junk"), 0o644))
		}},
		{"MANIFEST removed", func(t *testing.T, dir string) { require.NoError(t, os.Remove(pebbleFile(t, dir, "MANIFEST-", ""))) }},
		{"sstable removed", func(t *testing.T, dir string) { require.NoError(t, os.Remove(pebbleFile(t, dir, "", ".sst"))) }},
	}
	for i, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			cfg, l, _, all := indexedLedger(t, uint64(i))
			want := lookupAll(t, l, len(all))
			require.NoError(t, l.Close())
			d.damage(t, filepath.Join(cfg.Dir, indexDir))
			l, err := Open(cfg)
			require.NoError(t, err)
			defer l.Close()
			require.Equal(t, want, lookupAll(t, l, len(all)), "the rebuilt index answers as before")
		})
	}

	t.Run("I/O error", func(t *testing.T) {
		cfg, l, _, all := indexedLedger(t, 9)
		require.NoError(t, l.Close())
		dir := filepath.Join(cfg.Dir, indexDir)
		before := dirDigest(t, dir)
		inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
			if op.Kind == errorfs.OpOpen && strings.HasPrefix(op.Path, dir+string(filepath.Separator)) && strings.Contains(op.Path, "OPTIONS-") {
				return &fs.PathError{Op: "open", Path: op.Path, Err: syscall.EIO}
			}
			return nil
		})
		bad := cfg
		bad.FS = errorfs.Wrap(vfs.Default, inj)
		_, err := Open(bad)
		require.ErrorIs(t, err, syscall.EIO)
		require.Equal(t, before, dirDigest(t, dir), "the index store was touched")

		l, err = Open(cfg) // the host is well again: the index is there
		require.NoError(t, err)
		defer l.Close()
		require.False(t, l.IndexStats().Restarted)
		lookupAll(t, l, len(all))
	})
}

// lookupAll looks up transactions 1 to n through the index.
func lookupAll(t *testing.T, l *Ledger, n int) []*Result {
	t.Helper()
	ids := make([]TxID, n)
	for i := range ids {
		ids[i] = TxID(i + 1)
	}
	rs, _, err := l.LookupTransfers(context.Background(), ids, TxID(n))
	require.NoError(t, err)
	for i, r := range rs {
		require.NotNil(t, r, "tx %d", i+1)
	}
	return rs
}
