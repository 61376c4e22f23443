package wal

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// zeroFillDirect replaces a file with size zero bytes, or declines without
// touching it (another FS, an unaligned size).
func TestZeroFillDirect(t *testing.T) {
	p := filepath.Join(t.TempDir(), prepareTmp)
	require.NoError(t, os.WriteFile(p, []byte("stale bytes of a crashed preparation"), 0o644))
	done, err := zeroFillDirect(vfs.NewMem(), p, 1<<20)
	require.NoError(t, err)
	require.False(t, done)
	done, err = zeroFillDirect(vfs.Default, p, 1<<20+512)
	require.NoError(t, err)
	require.False(t, done)
	done, err = zeroFillDirect(vfs.Default, p, 3<<20/2)
	require.NoError(t, err)
	if !done {
		t.Skip("the test directory's filesystem refuses O_DIRECT")
	}
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Len(t, b, 3<<20/2)
	require.Equal(t, make([]byte, len(b)), b)
}
