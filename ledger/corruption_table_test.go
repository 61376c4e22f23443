package ledger

// The WAL and pebble store rows of the recovery rules table in
// docs/ledger.md, over the real on-disk layout: each case damages a copy of
// one closed ledger directory and asserts the exact outcome of Open and of
// Verify. A refusal must leave the directory byte for byte as it was.

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/ledger/internal/wal"
)

// dirDigest hashes every file's path, size and content under dir.
func dirDigest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	}))
	return out
}

// tableFixture is a closed ledger with three or more WAL segments, a
// snapshot inside an older segment, and pebble flushed to an sst.
type tableFixture struct {
	cfg     Config
	batches []batchAt
	segs    []string
	snap    uint64 // the newest snapshot's TxEnd
}

func newTableFixture(t *testing.T) tableFixture {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 1000, WALRetention: -1, WALMaxBatch: 64, WALSegmentSize: 256 << 10}
	fillLedger(t, cfg, 6000)
	// The Snapshotter snapshots whatever it has applied when it crosses a
	// boundary, so under load the last snapshot can cover the whole fill.
	// A tail written with periodic snapshots off, long enough to fill the
	// two newest segments, is always past it.
	tail := cfg
	tail.SnapshotEvery = -1
	fillLedger(t, tail, 6000)
	var snap uint64
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		require.NoError(t, db.Flush())
		it, err := prefixIter(db, prefixSnapshot)
		require.NoError(t, err)
		require.True(t, it.Last())
		m, err := decodeManifest(it.Value())
		require.NoError(t, err)
		snap = m.TxEnd
		require.NoError(t, it.Close())
	})
	f := tableFixture{cfg: cfg, batches: walBatches(t, cfg.Dir), segs: segmentPaths(t, cfg.Dir), snap: snap}
	require.GreaterOrEqual(t, len(f.segs), 3)
	last := f.batches[len(f.batches)-1]
	require.Equal(t, f.segs[len(f.segs)-1], last.file, "the newest segment holds batches")
	require.Less(t, f.snap, last.first, "the newest batch is past the snapshot")
	return f
}

// batchesIn returns the batches of segment file p.
func (f *tableFixture) batchesIn(p string) []batchAt {
	var out []batchAt
	for _, b := range f.batches {
		if b.file == p {
			out = append(out, b)
		}
	}
	return out
}

func flipByte(t *testing.T, p string, off int64) {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b[off] ^= 0x40
	require.NoError(t, os.WriteFile(p, b, 0o644))
}

func zeroRange(t *testing.T, p string, off, n int64) {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	clear(b[off : off+n])
	require.NoError(t, os.WriteFile(p, b, 0o644))
}

func truncateTo(t *testing.T, p string, size func(int64) int64) {
	t.Helper()
	st, err := os.Stat(p)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(p, size(st.Size())))
}

func pebbleFile(t *testing.T, dir, prefix, suffix string) string {
	t.Helper()
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	var found []string
	for _, n := range names {
		if strings.HasPrefix(n.Name(), prefix) && strings.HasSuffix(n.Name(), suffix) {
			found = append(found, n.Name())
		}
	}
	require.NotEmpty(t, found, "no %s*%s in %s", prefix, suffix, dir)
	sort.Strings(found)
	return filepath.Join(dir, found[len(found)-1])
}

func TestCorruptionTable(t *testing.T) {
	f := newTableFixture(t)
	// Paths below are in the fixture; each case maps them into its copy.
	newest, older, oldest := f.segs[len(f.segs)-1], f.segs[len(f.segs)-2], f.segs[0]
	nb, ob := f.batchesIn(newest), f.batchesIn(older)
	require.GreaterOrEqual(t, len(nb), 3)
	require.GreaterOrEqual(t, len(ob), 3)
	lastB := nb[len(nb)-1]
	rel := func(p string) string { r, _ := filepath.Rel(f.cfg.Dir, p); return filepath.ToSlash(r) }

	type outcome struct {
		torn   bool   // dropped and reported; else refused
		junk   bool   // the torn tail left non-zero bytes
		file   string // the file the refusal (or torn tail) names, relative to the dir
		offset int64  // -1: not checked
		first  TxID   // the first tx the refusal names, 0: not checked
		reason string // part of the reason
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, in func(string) string)
		want   outcome
	}{
		{"flip in the newest segment's last record", func(t *testing.T, in func(string) string) {
			flipByte(t, in(newest), lastB.off+19+int64(lastB.size)/2)
		}, outcome{torn: true, junk: true, file: rel(newest), offset: lastB.off}},
		{"zeroed 4 KiB block over the newest segment's last record", func(t *testing.T, in func(string) string) {
			zeroRange(t, in(newest), lastB.off, 4096)
		}, outcome{torn: true, file: rel(newest), offset: lastB.off}},
		{"flip in a middle record of the newest segment", func(t *testing.T, in func(string) string) {
			flipByte(t, in(newest), nb[1].off+25)
		}, outcome{file: rel(newest), offset: nb[1].off, first: TxID(nb[1].first), reason: "valid synced records after it"}},
		{"flip in the first batch's chunk header of the newest segment", func(t *testing.T, in func(string) string) {
			flipByte(t, in(newest), nb[0].off+2)
		}, outcome{file: rel(newest), offset: nb[0].off, first: TxID(nb[0].first), reason: "valid synced records after it"}},
		{"flip in the newest segment's header", func(t *testing.T, in func(string) string) {
			flipByte(t, in(newest), 25)
		}, outcome{file: rel(newest), offset: 0, reason: "header"}},
		{"zeroed 4 KiB block in the middle of the newest segment", func(t *testing.T, in func(string) string) {
			zeroRange(t, in(newest), nb[len(nb)/2].off&^4095, 4096)
		}, outcome{file: rel(newest), offset: -1, reason: "valid synced records after it"}},
		{"flip in a middle record of an older segment", func(t *testing.T, in func(string) string) {
			flipByte(t, in(older), ob[1].off+30)
		}, outcome{file: rel(older), offset: ob[1].off, first: TxID(ob[1].first)}},
		{"flip in an older segment's last record", func(t *testing.T, in func(string) string) {
			b := ob[len(ob)-1]
			flipByte(t, in(older), b.off+19+int64(b.size)/2)
		}, outcome{file: rel(older), offset: ob[len(ob)-1].off, first: TxID(ob[len(ob)-1].first), reason: "its successor starts at tx"}},
		{"zeroed 4 KiB block in an older segment", func(t *testing.T, in func(string) string) {
			zeroRange(t, in(older), ob[1].off&^4095, 4096)
		}, outcome{file: rel(older), offset: -1}},
		{"newest segment truncated by 3 bytes", func(t *testing.T, in func(string) string) {
			truncateTo(t, in(newest), func(n int64) int64 { return n - 3 })
		}, outcome{file: rel(newest), offset: -1, reason: "its header says"}},
		{"older segment truncated to half", func(t *testing.T, in func(string) string) {
			truncateTo(t, in(older), func(n int64) int64 { return n / 2 })
		}, outcome{file: rel(older), offset: -1, reason: "its header says"}},
		{"older segment deleted", func(t *testing.T, in func(string) string) {
			require.NoError(t, os.Remove(in(older)))
		}, outcome{file: rel(newest), offset: -1, reason: "segments missing"}},
		{"newest segment deleted", func(t *testing.T, in func(string) string) {
			require.NoError(t, os.Remove(in(newest)))
		}, outcome{file: rel(older), offset: -1, reason: "newest segments missing"}},
		{"oldest segment deleted", func(t *testing.T, in func(string) string) {
			require.NoError(t, os.Remove(in(oldest)))
		}, outcome{file: "wal/" + filepath.Base(f.segs[1]), offset: 0, reason: "oldest segments missing"}},
		{"older segment duplicated as the next segment", func(t *testing.T, in func(string) string) {
			dup := wal.Segment{Seq: uint64(len(f.segs)) + 1, First: f.batches[len(f.batches)-1].last + 1}
			b, err := os.ReadFile(in(older))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(in(""), walDir, dup.Name()), b, 0o644))
		}, outcome{offset: 0, reason: "segment header unreadable"}},
		{"MANIFEST damaged", func(t *testing.T, in func(string) string) {
			p := pebbleFile(t, in(""), "MANIFEST-", "")
			st, err := os.Stat(p)
			require.NoError(t, err)
			flipByte(t, p, st.Size()/2)
		}, outcome{offset: -1, reason: "damaged MANIFEST record"}},
		{"manifest marker deleted", func(t *testing.T, in func(string) string) {
			require.NoError(t, os.Remove(pebbleFile(t, in(""), "marker.manifest.", "")))
		}, outcome{file: "marker.manifest.*", offset: -1}},
		{"manifest marker names a missing MANIFEST", func(t *testing.T, in func(string) string) {
			p := pebbleFile(t, in(""), "marker.manifest.", "")
			require.NoError(t, os.Rename(p, filepath.Join(filepath.Dir(p), "marker.manifest.000009.MANIFEST-000999")))
		}, outcome{file: "MANIFEST-000999", offset: -1}},
		{"sst flipped", func(t *testing.T, in func(string) string) {
			p := pebbleFile(t, in(""), "", ".sst")
			flipByte(t, p, 100)
		}, outcome{file: "pebble store", offset: -1}},
		{"sst truncated", func(t *testing.T, in func(string) string) {
			truncateTo(t, pebbleFile(t, in(""), "", ".sst"), func(n int64) int64 { return n - 10 })
		}, outcome{offset: -1, reason: "size mismatch"}},
		{"sst deleted", func(t *testing.T, in func(string) string) {
			require.NoError(t, os.Remove(pebbleFile(t, in(""), "", ".sst")))
		}, outcome{offset: -1, reason: "file does not exist"}},
		{"OPTIONS damaged", func(t *testing.T, in func(string) string) {
			p := pebbleFile(t, in(""), "OPTIONS-", "")
			require.NoError(t, os.WriteFile(p, []byte("[Version]\n  pebble_version=0.1\n[Options]\n  bytes_per_sync=x\n"), 0o644))
		}, outcome{offset: -1, reason: "OPTIONS"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := f.cfg
			c.Dir = copyDir(t, f.cfg.Dir)
			in := func(p string) string {
				if p == "" {
					return c.Dir
				}
				return filepath.Join(c.Dir, rel(p))
			}
			tc.damage(t, in)
			before := dirDigest(t, c.Dir)
			rep, verr := verifyDir(nil, c.Dir)
			require.Equal(t, before, dirDigest(t, c.Dir), "Verify wrote")
			if tc.want.torn {
				require.NoError(t, verr)
				require.NotNil(t, rep.TornTail)
				require.Equal(t, tc.want.file, rep.TornTail.File)
				require.Equal(t, tc.want.offset, rep.TornTail.Offset)
				require.Equal(t, TxID(lastB.first-1), rep.TornTail.LastKept)
				require.Equal(t, tc.want.junk, rep.TornTail.Dropped > 0)
				rec, x, _, err := openState(t, c)
				require.NoError(t, err)
				require.Equal(t, rep.TornTail, rec.torn)
				require.Equal(t, TxID(lastB.first-1), x.Committed)
				// The dropped range is reused, and the directory verifies.
				rep, err = verifyDir(nil, c.Dir)
				require.NoError(t, err)
				require.Nil(t, rep.TornTail, "closed cleanly since")
				return
			}
			var ce *CorruptError
			require.ErrorAs(t, verr, &ce, "Verify")
			require.NotNil(t, rep)
			require.NotEmpty(t, rep.Findings)
			_, err := Open(c)
			var oe *CorruptError
			require.ErrorAs(t, err, &oe, "Open")
			require.ErrorIs(t, err, ErrCorrupt)
			require.Equal(t, before, dirDigest(t, c.Dir), "a refusal wrote")
			require.Equal(t, oe.File, rep.Findings[0].File, "Open and Verify name the same file")
			if tc.want.file != "" {
				require.Equal(t, tc.want.file, oe.File, "%v", oe)
			}
			if tc.want.offset >= 0 {
				require.Equal(t, tc.want.offset, oe.Offset, "%v", oe)
			}
			if tc.want.first != 0 {
				require.Equal(t, tc.want.first, oe.FirstTx, "%v", oe)
			}
			require.Contains(t, oe.Reason, tc.want.reason, "%v", oe)
			t.Logf("%v", oe)
		})
	}
}
