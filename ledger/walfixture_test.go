package ledger

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/ledger/internal/wal"
)

// batchAt is one WAL batch record on disk.
type batchAt struct {
	file        string // path
	off         int64  // offset of its first chunk header
	first, last uint64
	size        int    // payload bytes, type byte included
	batch       []byte // the batch (without the type byte)
}

// walBatches lists the batch records of a closed ledger directory.
func walBatches(t *testing.T, dir string) []batchAt {
	t.Helper()
	cfg := Config{Dir: dir}
	cfg, err := cfg.withDefaults()
	require.NoError(t, err)
	var out []batchAt
	_, err = wal.Scan(walOptions(&cfg, nil, nil), wal.Bounds{}, 0, func(seg wal.Segment, off int64, p []byte) error {
		first, last, err := batchSpan(p)
		if err != nil {
			return err
		}
		if off%(32<<10) > 32<<10-19 { // the writer padded the block's end
			off = (off/(32<<10) + 1) * (32 << 10)
		}
		out = append(out, batchAt{file: filepath.Join(dir, walDir, seg.Name()), off: off, first: first, last: last, size: len(p) + 1, batch: clone(p)})
		return nil
	})
	require.NoError(t, err)
	return out
}

// segmentPaths lists the WAL segment files of dir, oldest first.
func segmentPaths(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, walDir, "*.wal"))
	require.NoError(t, err)
	sort.Strings(m)
	return m
}

// patchBatch rewrites the payload of a single-chunk batch record in place
// and recomputes the chunk's checksum, so that only the ledger's own checks
// can object. mutate gets the batch (without the record type byte) and
// must keep its length.
func patchBatch(t *testing.T, b batchAt, mutate func(batch []byte)) {
	t.Helper()
	raw, err := os.ReadFile(b.file)
	require.NoError(t, err)
	h := b.off
	n := int64(binary.LittleEndian.Uint16(raw[h+4:]))
	require.Equal(t, int64(b.size), n, "patchBatch handles single-chunk records only")
	payload := raw[h+19 : h+19+n]
	mutate(payload[1:])
	c := crc32.Checksum(raw[h+6:h+19+n], crc32.MakeTable(crc32.Castagnoli))
	binary.LittleEndian.PutUint32(raw[h:], (c>>15|c<<17)+0xa282ead8) // pebble's masked CRC
	require.NoError(t, os.WriteFile(b.file, raw, 0o644))
}

// resealBatch recomputes a batch's own CRC after mutate changed it.
func resealBatch(batch []byte) {
	binary.LittleEndian.PutUint32(batch, crc32.Checksum(batch[4:], castagnoli))
}

// rewriteWALFrom replaces the WAL of the closed ledger in dir by a new log
// holding the batches whose last transaction is at least keep: what
// retention leaves, at batch granularity.
func rewriteWALFrom(t *testing.T, dir string, keep uint64) {
	t.Helper()
	bs := walBatches(t, dir)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, walDir)))
	withDB(t, dir, func(db *pebble.DB) {
		cfg, err := Config{Dir: dir}.withDefaults()
		require.NoError(t, err)
		var w *wal.Writer
		for _, b := range bs {
			if b.last < keep {
				continue
			}
			if w == nil {
				w, err = wal.Create(walOptions(&cfg, db, nil), nil, b.first)
				require.NoError(t, err)
			}
			require.NoError(t, w.Append(append([]byte{0}, b.batch...), b.first, b.last))
		}
		require.NoError(t, w.Close())
	})
}

// downgrade rewrites the meta record of the closed ledger in dir as one of
// an older format version, as the code that wrote that version did.
func downgrade(t *testing.T, dir string, version int) {
	t.Helper()
	withDB(t, dir, func(db *pebble.DB) {
		m, err := readMeta(db, "")
		require.NoError(t, err)
		rec, err := encodeMsgpack(meta{FormatVersion: version, MaxAccounts: m.MaxAccounts, Fingerprint: fingerprintOf(version, m.MaxAccounts), CreatedUnixNs: m.CreatedUnixNs})
		require.NoError(t, err)
		require.NoError(t, db.Set(metaKey, rec, pebble.Sync))
	})
}
