package ledger

import (
	"crypto/sha256"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lanework/lanework/ledger/internal/wal"
	"github.com/stretchr/testify/require"
)

// keptFile is a file of index/wal/: its inode's identity and its bytes'
// hash.
type keptFile struct {
	fi  os.FileInfo
	sum [32]byte
}

func keptFiles(t *testing.T, dir string) map[string]keptFile {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, indexDir, walDir))
	require.NoError(t, err)
	m := map[string]keptFile{}
	for _, e := range ents {
		p := filepath.Join(dir, indexDir, walDir, e.Name())
		fi, err := os.Stat(p)
		require.NoError(t, err)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		m[e.Name()] = keptFile{fi, sha256.Sum256(b)}
	}
	return m
}

// liveSegments lists wal/ of dir.
func liveSegments(t *testing.T, dir string) []wal.Segment {
	t.Helper()
	segs, _, err := listSegments(vfs.Default, dir)
	require.NoError(t, err)
	return segs
}

// requireAllKept checks that every live segment of dir is in index/wal/,
// the same file.
func requireAllKept(t *testing.T, dir string) {
	t.Helper()
	kept := keptFiles(t, dir)
	for _, s := range liveSegments(t, dir) {
		k, ok := kept[s.Name()]
		require.True(t, ok, "%s not kept", s.Name())
		fi, err := os.Stat(filepath.Join(dir, walDir, s.Name()))
		require.NoError(t, err)
		require.True(t, os.SameFile(fi, k.fi), "%s kept as another file", s.Name())
	}
}

// TestKeptSegmentsIndexOffThenOn: with the index on, every segment is
// kept in index/wal/ and retention unlinks only wal/ names; a run with
// the index off and retention running never recycles a kept segment (the
// files of index/wal/ keep their inodes and bytes, though retention
// retired them from wal/); the next Open with the index links the
// segments that run created, catches up and reads the whole history.
func TestKeptSegmentsIndexOffThenOn(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 17))
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 64, WALSegmentSize: 256 << 10, SnapshotEvery: 200, WALRetention: 20000, Index: true}
	l, err := Open(cfg)
	require.NoError(t, err)
	accts, all := histAccounts(t, l, 16)
	ref := uint64(0)
	all = append(all, histMore(t, l, rng, accts, &ref, 500, 60)...)
	require.NoError(t, l.Close())
	requireAllKept(t, cfg.Dir)
	first := keptFiles(t, cfg.Dir)
	live := liveSegments(t, cfg.Dir)
	require.Greater(t, len(first), len(live), "retention with the index on retired kept segments")

	off := cfg
	off.Index = false
	l, err = Open(off)
	require.NoError(t, err)
	all = append(all, histMore(t, l, rng, accts, &ref, 250, 60)...)
	require.NoError(t, l.Close())
	retired := 0
	for _, s := range live {
		if _, err := os.Stat(filepath.Join(cfg.Dir, walDir, s.Name())); os.IsNotExist(err) {
			retired++
		}
	}
	require.Positive(t, retired, "the run without the index retired segments the index kept")
	second := keptFiles(t, cfg.Dir)
	require.Len(t, second, len(first), "the run without the index linked nothing")
	for name, k := range first {
		require.True(t, os.SameFile(k.fi, second[name].fi), "%s", name)
		require.Equal(t, k.sum, second[name].sum, "kept %s changed: recycled", name)
	}

	l, err = Open(cfg)
	require.NoError(t, err)
	st := l.IndexStats()
	require.False(t, st.Restarted, "stats %+v", st)
	require.Positive(t, st.CaughtUp)
	checkIndex(t, l, newHistModel(all), rng)
	require.NoError(t, l.Close())
	requireAllKept(t, cfg.Dir)
	third := keptFiles(t, cfg.Dir)
	for name, k := range first {
		require.Equal(t, k.sum, third[name].sum, "kept %s changed", name)
	}
	require.Greater(t, len(third), len(first), "the segments of the run without the index, linked")
}

// TestKeptSegmentsRelinkConflictRestart: Open with the index links a live
// segment missing from index/wal/ (a crash between its creation and its
// link), refuses a kept name that is another file than wal/'s, naming
// both, and, when the index restarts (retention removed the WAL it
// needed), empties index/wal/ of all but the live segments.
func TestKeptSegmentsRelinkConflictRestart(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 3))
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 64, WALSegmentSize: 256 << 10, SnapshotEvery: 200, WALRetention: 1, Index: true}
	l, err := Open(cfg)
	require.NoError(t, err)
	accts, _ := histAccounts(t, l, 16)
	ref := uint64(0)
	histMore(t, l, rng, accts, &ref, 100, 60)
	require.NoError(t, l.Close())
	requireAllKept(t, cfg.Dir)

	// Unlinked, as a crash between creation and link leaves it.
	live := liveSegments(t, cfg.Dir)
	newest := live[len(live)-1].Name()
	require.NoError(t, os.Remove(filepath.Join(cfg.Dir, indexDir, walDir, newest)))
	l, err = Open(cfg)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	requireAllKept(t, cfg.Dir)

	// Another file under a kept name: refused, nothing replaced.
	p := filepath.Join(cfg.Dir, indexDir, walDir, newest)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.Remove(p))
	require.NoError(t, os.WriteFile(p, b, 0o644))
	_, err = Open(cfg)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, indexDir+"/"+walDir+"/"+newest, ce.File)
	require.Contains(t, ce.Reason, walDir+"/"+newest)
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, b, got)
	require.NoError(t, os.Remove(p))
	require.NoError(t, os.Link(filepath.Join(cfg.Dir, walDir, newest), p))

	// Off long enough that retention removes what the index needs: the
	// index restarts, and only the live segments stay kept.
	off := cfg
	off.Index = false
	l, err = Open(off)
	require.NoError(t, err)
	histMore(t, l, rng, accts, &ref, 200, 60)
	require.NoError(t, l.Close())
	before := keptFiles(t, cfg.Dir)
	l, err = Open(cfg)
	require.NoError(t, err)
	require.True(t, l.IndexStats().Restarted)
	require.NoError(t, l.Close())
	requireAllKept(t, cfg.Dir)
	kept := keptFiles(t, cfg.Dir)
	require.Len(t, kept, len(liveSegments(t, cfg.Dir)), "only the live segments")
	require.Less(t, len(kept), len(before), "the segments before the restart removed")
}

// TestRecoverKeepsSegmentNames: ledger recover numbers its new log's
// segments after every segment the old log had, so that no name the
// index keeps is used for another file, and leaves index/wal/ as it is;
// the recovered directory verifies and opens with the index, which links
// the new segments.
func TestRecoverKeepsSegmentNames(t *testing.T) {
	cfg, _, ce := damagedLedger(t)
	old := liveSegments(t, cfg.Dir)
	_, err := wal.LinkKept(vfs.Default, filepath.Join(cfg.Dir, walDir), filepath.Join(cfg.Dir, indexDir, walDir), old)
	require.NoError(t, err)
	kept := keptFiles(t, cfg.Dir)
	_, err = truncateDir(nil, cfg.Dir, uint64(ce.FirstTx)-1)
	require.NoError(t, err)
	segs := liveSegments(t, cfg.Dir)
	require.NotEmpty(t, segs)
	require.Equal(t, old[len(old)-1].Seq+1, segs[0].Seq, "numbered after the old log")
	after := keptFiles(t, cfg.Dir)
	require.Len(t, after, len(kept))
	for name, k := range kept {
		require.True(t, os.SameFile(k.fi, after[name].fi), "%s", name)
		require.Equal(t, k.sum, after[name].sum, "%s", name)
	}
	rep, err := verifyDir(vfs.Default, cfg.Dir)
	require.NoError(t, err)
	require.NotEmpty(t, rep.truncations)
	on := cfg
	on.Index = true
	l, err := Open(on)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	requireAllKept(t, cfg.Dir)
	rep, err = verifyDir(vfs.Default, cfg.Dir)
	require.NoError(t, err)
	require.Empty(t, rep.Findings)
}
