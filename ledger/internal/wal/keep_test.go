package wal

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// realOptions are testOptions on the OS's filesystem, in a new directory,
// with a log directory and a kept one.
func realOptions(t *testing.T) (Options, string) {
	root := t.TempDir()
	opts := testOptions(vfs.Default)
	opts.Dir = filepath.Join(root, "wal")
	return opts, filepath.Join(root, "kept")
}

// fileSums returns the SHA-256 of every file in dir, by name.
func fileSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	sums := map[string][32]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		sums[e.Name()] = sha256.Sum256(b)
	}
	return sums
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Stat(a)
	require.NoError(t, err)
	fb, err := os.Stat(b)
	require.NoError(t, err)
	return os.SameFile(fa, fb)
}

// With Keep, every segment is linked into the kept directory before its
// first batch (Created sees it there, the same file), successors are
// allocated rather than zero-filled or recycled, closed segments are
// dropped from the page cache, and retention unlinks only the log's names:
// the kept files read back byte for byte after more segments were written.
func TestKeptSegments(t *testing.T) {
	opts, keep := realOptions(t)
	opts.Keep = keep
	var created []Segment
	opts.Created = func(s Segment) error {
		require.True(t, sameFile(t, filepath.Join(opts.Dir, s.Name()), filepath.Join(keep, s.Name())), "%s kept before Created", s.Name())
		created = append(created, s)
		return nil
	}
	w, err := Create(opts, nil, 1)
	require.NoError(t, err)
	next := uint64(1)
	add := func() {
		b := batch(next, next, 900)
		for i := HeaderRoom + 16; i < len(b); i++ {
			b[i] = 0xab
		}
		require.NoError(t, w.Append(b, next, next))
		next++
	}
	for len(w.Segments()) < 5 || w.Dropped() == 0 {
		add()
		require.Less(t, len(w.Segments()), 40, "no closed segment dropped from the page cache")
	}
	segs := w.Segments()
	require.Positive(t, w.Allocated(), "successors allocated")
	// A successor (not the sparse first segment) is allocated in full.
	fi, err := os.Stat(filepath.Join(keep, segs[2].Name()))
	require.NoError(t, err)
	n, ok := linkCount(fi)
	require.True(t, ok)
	require.Equal(t, uint64(2), n)
	require.True(t, writtenOut(vfs.Default, filepath.Join(keep, segs[2].Name()), opts.SegmentSize), "allocated")

	closed := fileSums(t, keep)
	delete(closed, w.current().Name())
	removed, err := w.RemoveBelow(segs[3].First)
	require.NoError(t, err)
	require.Equal(t, 3, removed)
	_, err = os.Stat(filepath.Join(opts.Dir, recycleTmp))
	require.True(t, os.IsNotExist(err), "a kept segment is never the spare")
	for _, s := range segs[:3] {
		_, err := os.Stat(filepath.Join(opts.Dir, s.Name()))
		require.True(t, os.IsNotExist(err), "%s retired", s.Name())
	}
	for len(w.Segments()) < 6 {
		add()
	}
	require.Zero(t, w.Recycled())
	require.NoError(t, w.Close())
	after := fileSums(t, keep)
	for name, sum := range closed {
		require.Equal(t, sum, after[name], "kept %s changed", name)
	}
	names := make([]string, 0, len(after))
	for name := range after {
		names = append(names, name)
	}
	slices.Sort(names)
	want := make([]string, 0, len(created))
	for _, s := range created {
		want = append(want, s.Name())
	}
	require.Equal(t, want, names, "every segment ever created, and nothing else")
}

// A retired segment with another link is never recycled, by a Writer
// that does not keep either (the index off for a run): the preparer
// writes zeros instead, and the linked file's bytes stay as they were. An
// unlinked one is recycled as before.
func TestLinkedSegmentNotRecycled(t *testing.T) {
	for _, link := range []bool{true, false} {
		opts, keep := realOptions(t)
		w, err := Create(opts, nil, 1)
		require.NoError(t, err)
		next := uint64(1)
		for len(w.Segments()) < 4 {
			require.NoError(t, w.Append(batch(next, next, 900), next, next))
			next++
		}
		segs := w.Segments()
		if link {
			n, err := LinkKept(vfs.Default, opts.Dir, keep, segs[:3])
			require.NoError(t, err)
			require.Equal(t, 3, n)
		}
		var sums map[string][32]byte
		if link {
			sums = fileSums(t, keep)
		}
		_, err = w.RemoveBelow(segs[3].First)
		require.NoError(t, err)
		_, err = os.Stat(filepath.Join(opts.Dir, recycleTmp))
		require.Equal(t, link, os.IsNotExist(err), "linked %t: the spare", link)
		for len(w.Segments()) < 4 {
			require.NoError(t, w.Append(batch(next, next, 900), next, next))
			next++
		}
		require.Equal(t, link, w.Recycled() == 0, "linked %t", link)
		require.NoError(t, w.Close())
		if link {
			require.Equal(t, sums, fileSums(t, keep))
		}
	}
}

// LinkKept links what is missing and accepts a name that is the same
// file; a name that is another file is a *ConflictError naming both.
// PruneKept removes every name but the live segments'.
func TestLinkKeptConflictPrune(t *testing.T) {
	opts, keep := realOptions(t)
	w, err := Create(opts, nil, 1)
	require.NoError(t, err)
	next := uint64(1)
	for len(w.Segments()) < 3 {
		require.NoError(t, w.Append(batch(next, next, 900), next, next))
		next++
	}
	require.NoError(t, w.Close())
	segs, _, err := List(vfs.Default, opts.Dir)
	require.NoError(t, err)
	n, err := LinkKept(vfs.Default, opts.Dir, keep, segs[:1])
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = LinkKept(vfs.Default, opts.Dir, keep, segs)
	require.NoError(t, err)
	require.Equal(t, len(segs)-1, n, "only the missing ones")
	for _, s := range segs {
		require.True(t, sameFile(t, filepath.Join(opts.Dir, s.Name()), filepath.Join(keep, s.Name())))
	}

	// A copy under a kept name: another inode, refused.
	victim := filepath.Join(keep, segs[1].Name())
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.NoError(t, os.Remove(victim))
	require.NoError(t, os.WriteFile(victim, b, 0o644))
	_, err = LinkKept(vfs.Default, opts.Dir, keep, segs)
	var ce *ConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, victim, ce.Kept)
	require.Equal(t, filepath.Join(opts.Dir, segs[1].Name()), ce.Live)
	got, err := os.ReadFile(victim)
	require.NoError(t, err)
	require.True(t, bytes.Equal(b, got), "never replaced")

	require.NoError(t, os.WriteFile(filepath.Join(keep, Segment{Seq: 99, First: 9}.Name()), nil, 0o644))
	n, err = PruneKept(vfs.Default, keep, segs[2:])
	require.NoError(t, err)
	require.Equal(t, 3, n)
	left, err := os.ReadDir(keep)
	require.NoError(t, err)
	require.Len(t, left, 1)
	require.Equal(t, segs[2].Name(), left[0].Name())
	n, err = PruneKept(vfs.Default, filepath.Join(keep, "missing"), nil)
	require.NoError(t, err)
	require.Zero(t, n)
}

// A crash between a segment's creation and its link (here: the link
// fails) leaves a live segment LinkKept then links; FirstSeq starts a new
// log's numbers after another's.
func TestKeepAfterFailedLink(t *testing.T) {
	opts, keep := realOptions(t)
	opts.Keep = keep
	opts.FirstSeq = 7
	w, err := Create(opts, nil, 1)
	require.NoError(t, err)
	require.Equal(t, uint64(7), w.current().Seq)
	next := uint64(1)
	// The next segment's kept name is taken by another file: the link
	// fails, the segment exists, no batch was written to it.
	succ := Segment{Seq: 8}
	for {
		b := batch(next, next, 900)
		pos := w.lw.Size()
		if pos+recordBound(len(b))+chunkHeader > w.size || w.leaveSparse() {
			succ.First = next
			require.NoError(t, os.WriteFile(filepath.Join(keep, succ.Name()), []byte("another file"), 0o644))
			var ce *ConflictError
			require.ErrorAs(t, w.Append(b, next, next), &ce)
			break
		}
		require.NoError(t, w.Append(b, next, next))
		next++
	}
	require.NoError(t, w.Close())
	require.NoError(t, os.Remove(filepath.Join(keep, succ.Name())))
	segs, _, err := List(vfs.Default, opts.Dir)
	require.NoError(t, err)
	require.Equal(t, succ, segs[len(segs)-1], "created, not linked")
	n, err := LinkKept(vfs.Default, opts.Dir, keep, segs)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.True(t, sameFile(t, filepath.Join(opts.Dir, succ.Name()), filepath.Join(keep, succ.Name())))
}
