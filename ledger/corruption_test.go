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
	bal := make([]int64, cfg.MaxAccounts)
	for a := range bal {
		bal[a], err = l.Balance(uint64(a))
		require.NoError(t, err)
	}
	return l.recovered, x, bal, nil
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir() + "/copy"
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}

// Row: last WAL batch truncated or torn. Open drops exactly that batch (its
// transactions were never acknowledged: Committed only covers synced
// batches), and the next ids reuse its range.
func TestCorruptionTornLastBatch(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALMaxBatch: 8}
	fillLedger(t, cfg, 100)
	var last []byte
	withDB(t, cfg.Dir, func(db *pebble.DB) { keys := walKeys(t, db); last = keys[len(keys)-1] })
	first, _ := parseIDKey(prefixWAL, last)
	for _, cut := range []int{1, 5, batchHeaderLen, 40} {
		dir := copyDir(t, cfg.Dir)
		setValue(t, dir, last, func(v []byte) []byte { return v[:len(v)-cut] })
		c := cfg
		c.Dir = dir
		rec, x, bal, err := openState(t, c)
		require.NoError(t, err, "cut %d", cut)
		require.Equal(t, last, rec.torn)
		require.Equal(t, TxID(first-1), x.Committed)
		var sum int64
		for _, b := range bal {
			sum += b
		}
		require.Zero(t, sum)
		rep, err := Verify(dir)
		require.NoError(t, err, "the torn batch is gone for good")
		require.Nil(t, rep.TornTail)
	}
}

// Row: a byte flipped in a middle WAL batch. Open refuses with a
// *CorruptError naming the key and the tx range, whichever byte it is.
func TestCorruptionMiddleBatchFlip(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALMaxBatch: 8}
	fillLedger(t, cfg, 100)
	var bad, next []byte
	var size int
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		keys := walKeys(t, db)
		bad, next = keys[len(keys)/2], keys[len(keys)/2+1]
		v, closer, err := db.Get(bad)
		require.NoError(t, err)
		size = len(v)
		closer.Close()
	})
	first, _ := parseIDKey(prefixWAL, bad)
	nf, _ := parseIDKey(prefixWAL, next)
	for _, pos := range []int{0, 3, 4, 12, 16, 24, 25, 26, 28, 32, size / 2, size - 1} {
		dir := copyDir(t, cfg.Dir)
		setValue(t, dir, bad, func(v []byte) []byte { v[pos] ^= 0x04; return v })
		_, err := Open(Config{Dir: dir, MaxAccounts: 8})
		var ce *CorruptError
		require.ErrorAs(t, err, &ce, "byte %d", pos)
		require.ErrorIs(t, err, ErrCorrupt)
		require.Equal(t, bad, ce.Key)
		require.Equal(t, TxID(first), ce.FirstTx)
		require.Equal(t, TxID(nf-1), ce.LastTx)
	}
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

	pruned := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 200, WALRetention: 100, WALMaxBatch: 16}
	fillLedger(t, pruned, 2000)
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
// with ErrIncompatible and changes no record.
func TestCorruptionIncompatibleChangesNothing(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 50, WALMaxBatch: 8}
	fillLedger(t, cfg, 120)
	// A torn tail that a compatible Open would delete.
	withDB(t, cfg.Dir, func(db *pebble.DB) { require.NoError(t, db.Set(idKey(prefixWAL, 121), []byte("torn"), pebble.Sync)) })
	keys, vals := allRecords(t, cfg.Dir)
	_, err := Open(Config{Dir: cfg.Dir, MaxAccounts: 16})
	require.ErrorIs(t, err, ErrIncompatible)
	k2, v2 := allRecords(t, cfg.Dir)
	require.Equal(t, keys, k2)
	require.Equal(t, vals, v2)

	withDB(t, cfg.Dir, func(db *pebble.DB) {
		rec, err := encodeMsgpack(meta{FormatVersion: formatVersion + 1, MaxAccounts: 8, Fingerprint: fingerprint(8)})
		require.NoError(t, err)
		require.NoError(t, db.Set(metaKey, rec, pebble.Sync))
	})
	keys, vals = allRecords(t, cfg.Dir)
	_, err = Open(cfg)
	require.ErrorIs(t, err, ErrIncompatible)
	_, err = Verify(cfg.Dir)
	require.ErrorIs(t, err, ErrIncompatible)
	k2, v2 = allRecords(t, cfg.Dir)
	require.Equal(t, keys, k2)
	require.Equal(t, vals, v2)
}

// Sweep: one random bit flipped in one random record, many times. Every
// outcome is a typed refusal or the true state; the only other one allowed
// is the documented drop of a damaged last WAL batch (recovered.torn set).
// Verify reports every flip.
func TestCorruptionNeverSilent(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 150, WALRetention: -1, WALMaxBatch: 32}
	fillLedger(t, cfg, 680) // the WAL runs past the newest snapshot
	_, wantX, wantBal, err := openState(t, cfg)
	require.NoError(t, err)
	keys, vals := allRecords(t, cfg.Dir)
	var lastWAL []byte
	for _, k := range keys {
		if k[0] == prefixWAL {
			lastWAL = k
		}
	}
	rng := rand.New(rand.NewPCG(6, 6))
	outcomes := map[string]int{}
	for trial := range 60 {
		i := rng.IntN(len(keys))
		if trial < 4 {
			i = 0 // the meta record
		}
		pos, bit := rng.IntN(len(vals[i])), byte(1)<<rng.IntN(8)
		c := cfg
		c.Dir = copyDir(t, cfg.Dir)
		setValue(t, c.Dir, keys[i], func(v []byte) []byte { v[pos] ^= bit; return v })
		rep, verr := Verify(c.Dir)
		require.True(t, verr != nil || (rep != nil && rep.TornTail != nil), "flip %x byte %d undetected by Verify", keys[i], pos)
		rec, x, bal, err := openState(t, c)
		switch {
		case err != nil:
			require.ErrorIs(t, err, ErrCorrupt, "key %x byte %d", keys[i], pos)
			outcomes["refused"]++
		case rec.torn != nil:
			require.Equal(t, lastWAL, keys[i])
			first, _ := parseIDKey(prefixWAL, lastWAL)
			require.Equal(t, TxID(first-1), x.Committed)
			outcomes["last batch dropped"]++
		default:
			require.Equal(t, wantX, x, "key %x byte %d", keys[i], pos)
			require.Equal(t, wantBal, bal, "key %x byte %d", keys[i], pos)
			outcomes["true state"]++
		}
	}
	t.Logf("outcomes over 60 flips: %v", outcomes)
}

// A damaged last WAL batch that the loaded snapshot covers was synced before
// the snapshot: Open and Verify report it instead of dropping it as torn.
func TestCorruptionCoveredLastBatch(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALRetention: -1, WALMaxBatch: 8}
	fillLedger(t, cfg, 100)
	var last []byte
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		r, err := recoverState(db, &Config{MaxAccounts: 8, DedupWindow: DefaultDedupWindow})
		require.NoError(t, err)
		_, err = writeSnapshot(db, &cfg, &snapshotData{txID: 100, refs: r.refs}, r.bal, func() uint64 { return 100 }, nil, nil)
		require.NoError(t, err)
		keys := walKeys(t, db)
		last = keys[len(keys)-1]
	})
	setValue(t, cfg.Dir, last, func(v []byte) []byte { return v[:len(v)-1] })
	_, err := Open(cfg)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, last, ce.Key)
	require.Contains(t, ce.Reason, "not a torn write")
	rep, err := Verify(cfg.Dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Nil(t, rep.TornTail)
	require.Equal(t, last, rep.Findings[0].Key)
}
