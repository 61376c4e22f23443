package ledger

// The corruption behaviour table of docs/ledger.md, one test per row, plus a
// randomized sweep proving that no injected damage yields a wrong balance.

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

// allRecords returns every key and value of the closed ledger in dir.
func allRecords(t *testing.T, dir string) (keys, vals [][]byte) {
	t.Helper()
	withDB(t, dir, func(db *pebble.DB) {
		it, err := db.NewIter(nil)
		require.NoError(t, err)
		for ok := it.First(); ok; ok = it.Next() {
			keys = append(keys, clone(it.Key()))
			vals = append(vals, clone(it.Value()))
		}
		require.NoError(t, it.Close())
	})
	return keys, vals
}

// openState opens cfg, returns its indexes and balances, and closes it.
func openState(t *testing.T, cfg Config) (recoveryInfo, Indexes, []int64, error) {
	t.Helper()
	l, err := Open(cfg)
	if err != nil {
		return recoveryInfo{}, Indexes{}, nil, err
	}
	defer func() { require.NoError(t, l.Close()) }()
	x, err := l.Indexes()
	require.NoError(t, err)
	return l.recovered, x, balances(t, l), nil
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir() + "/copy"
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}

// Rows: newest snapshot corrupt, and snapshot deleted. Open falls back to
// the previous snapshot, then to the WAL, reaching the same state; when the
// retained WAL no longer covers the gap it refuses with a *CorruptError.
func TestCorruptionSnapshotFallback(t *testing.T) {
	damage := map[string]func(t *testing.T, dir string, id uint64){
		"manifest flipped": func(t *testing.T, dir string, id uint64) {
			setValue(t, dir, idKey(prefixSnapshot, id), func(v []byte) []byte { v[len(v)-1] ^= 1; return v })
		},
		"chunk flipped": func(t *testing.T, dir string, id uint64) {
			setValue(t, dir, chunkKey(id, 0), func(v []byte) []byte { v[20] ^= 1; return v })
		},
		"refs flipped": func(t *testing.T, dir string, id uint64) {
			setValue(t, dir, chunkKey(id, refsChunk), func(v []byte) []byte { v[len(v)-1] ^= 1; return v })
		},
		"deleted": func(t *testing.T, dir string, id uint64) {
			withDB(t, dir, func(db *pebble.DB) {
				require.NoError(t, db.Delete(idKey(prefixSnapshot, id), pebble.Sync))
				require.NoError(t, db.DeleteRange(chunkKey(id, 0), chunkKey(id+1, 0), pebble.Sync))
			})
		},
	}
	snapshots := func(t *testing.T, dir string) []uint64 {
		var ids []uint64
		keys, _ := allRecords(t, dir)
		for _, k := range keys {
			if id, ok := parseIDKey(prefixSnapshot, k); ok {
				ids = append(ids, id)
			}
		}
		return ids
	}
	full := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 300, WALRetention: -1, WALMaxBatch: 16}
	fillLedger(t, full, 1000)
	_, wantX, wantBal, err := openState(t, full)
	require.NoError(t, err)
	ids := snapshots(t, full.Dir)
	require.Len(t, ids, 2)

	// Retention removes whole segments: snapshots more than a segment apart.
	pruned := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 6000, WALRetention: 100, WALMaxBatch: 64, WALSegmentSize: 256 << 10}
	fillLedger(t, pruned, 13000)
	pids := snapshots(t, pruned.Dir)
	require.Len(t, pids, 2)

	for name, f := range damage {
		t.Run(name, func(t *testing.T) {
			c := full
			c.Dir = copyDir(t, full.Dir)
			f(t, c.Dir, ids[1])
			rec, x, bal, err := openState(t, c)
			require.NoError(t, err)
			require.Equal(t, ids[0], rec.snapshot, "previous snapshot")
			require.Equal(t, wantX, x)
			require.Equal(t, wantBal, bal)

			c.Dir = copyDir(t, full.Dir)
			f(t, c.Dir, ids[1])
			f(t, c.Dir, ids[0])
			rec, x, bal, err = openState(t, c)
			require.NoError(t, err)
			require.Zero(t, rec.snapshot, "WAL from tx 1")
			require.Equal(t, wantX, x)
			require.Equal(t, wantBal, bal)

			c = pruned
			c.Dir = copyDir(t, pruned.Dir)
			f(t, c.Dir, pids[1])
			_, err = Open(c)
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
			require.Contains(t, ce.Reason, "missing from the WAL")
		})
	}
}

// Row: a directory of another MaxAccounts or format version. Open fails
// with ErrIncompatible and changes nothing on disk.
func TestCorruptionIncompatibleChangesNothing(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 50, WALMaxBatch: 8, WALSegmentSize: 256 << 10}
	fillLedger(t, cfg, 120)
	before := dirDigest(t, cfg.Dir)
	_, err := Open(Config{Dir: cfg.Dir, MaxAccounts: 16})
	require.ErrorIs(t, err, ErrIncompatible)
	require.Equal(t, before, dirDigest(t, cfg.Dir))

	withDB(t, cfg.Dir, func(db *pebble.DB) {
		rec, err := encodeMsgpack(meta{FormatVersion: formatVersion + 1, MaxAccounts: 8, Fingerprint: fingerprint(8)})
		require.NoError(t, err)
		require.NoError(t, db.Set(metaKey, rec, pebble.Sync))
	})
	before = dirDigest(t, cfg.Dir)
	_, err = Open(cfg)
	require.ErrorIs(t, err, ErrIncompatible)
	_, err = verifyDir(nil, cfg.Dir)
	require.ErrorIs(t, err, ErrIncompatible)
	require.Equal(t, before, dirDigest(t, cfg.Dir))
}

// Sweep: one random bit flipped in one random pebble record, many times.
// Every outcome is a typed refusal or the true state; Verify reports every
// flip that Open refuses. (WAL damage is the table of TestCorruptionTable.)
func TestCorruptionNeverSilent(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 150, WALRetention: -1, WALMaxBatch: 32, WALSegmentSize: 256 << 10}
	fillLedger(t, cfg, 680) // the WAL runs past the newest snapshot
	_, wantX, wantBal, err := openState(t, cfg)
	require.NoError(t, err)
	keys, vals := allRecords(t, cfg.Dir)
	rng := rand.New(rand.NewPCG(6, 6))
	outcomes := map[string]int{}
	for trial := range 40 {
		i := rng.IntN(len(keys))
		if trial < 4 {
			i = 0 // the meta record
		}
		pos, bit := rng.IntN(len(vals[i])), byte(1)<<rng.IntN(8)
		c := cfg
		c.Dir = copyDir(t, cfg.Dir)
		setValue(t, c.Dir, keys[i], func(v []byte) []byte { v[pos] ^= bit; return v })
		_, verr := verifyDir(nil, c.Dir)
		_, x, bal, err := openState(t, c)
		switch {
		case err != nil:
			require.ErrorIs(t, err, ErrCorrupt, "key %x byte %d", keys[i], pos)
			require.Error(t, verr, "flip %x byte %d refused by Open, not by Verify", keys[i], pos)
			outcomes["refused"]++
		default:
			require.Equal(t, wantX, x, "key %x byte %d", keys[i], pos)
			require.Equal(t, wantBal, bal, "key %x byte %d", keys[i], pos)
			outcomes["true state"]++
		}
	}
	t.Logf("outcomes over 40 flips: %v", outcomes)
}

// A damaged last WAL record that the loaded snapshot covers was synced
// before the snapshot: Open and Verify report it instead of dropping it as
// torn.
func TestCorruptionCoveredLastBatch(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALRetention: -1, WALMaxBatch: 8}
	fillLedger(t, cfg, 100)
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		r, err := recoverState(db, &Config{Dir: cfg.Dir, MaxAccounts: 8, DedupWindow: DefaultDedupWindow})
		require.NoError(t, err)
		_, err = writeSnapshot(db, &cfg, &snapshotData{txID: 100, refs: r.refs, accounts: r.accts.n}, r.bal, func() uint64 { return 100 }, nil, nil)
		require.NoError(t, err)
	})
	bs := walBatches(t, cfg.Dir)
	last := bs[len(bs)-1]
	flipByte(t, last.file, last.off+19+int64(last.size)/2)
	_, err := Open(cfg)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, last.off, ce.Offset)
	require.Contains(t, ce.Reason, "not a torn write")
	rep, err := verifyDir(nil, cfg.Dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Nil(t, rep.TornTail)
	require.Equal(t, ce.File, rep.Findings[0].File)
	require.Equal(t, last.off, rep.Findings[0].Offset)
}
