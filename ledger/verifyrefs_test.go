package ledger

import (
	"encoding/binary"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

// storedRun is one run of the idempotency index as stored.
type storedRun struct {
	key     []byte
	entries []refUse // ts: the run's
	firstTs int64
	lastTs  int64
}

func readStoredRuns(t *testing.T, db *pebble.DB) []storedRun {
	t.Helper()
	var runs []storedRun
	require.NoError(t, scanRuns(db, func(k []byte, r runInfo) error {
		s := storedRun{key: clone(k), firstTs: r.firstTs, lastTs: r.lastTs}
		for e := r.entries; len(e) > 0; e = e[refRunEntry:] {
			s.entries = append(s.entries, refUse{id: binary.LittleEndian.Uint64(e), ref: binary.LittleEndian.Uint64(e[8:])})
		}
		runs = append(runs, s)
		return nil
	}))
	return runs
}

// writeStoredRun writes r under its own key (which must be its first id).
func writeStoredRun(t *testing.T, db *pebble.DB, r storedRun) {
	t.Helper()
	var run refRun
	for _, e := range r.entries {
		run.add(e.id, e.ref, r.firstTs)
	}
	run.lastTs = r.lastTs
	require.NoError(t, run.flush(db))
}

// refFixture is a closed ledger with the index on, snapshots every 300 tx
// and the WAL after the last one, reopened twice (each Open rewrites the
// refs it replays after the snapshot). Transaction 5 is a Duplicate of 1.
func refFixture(t *testing.T) Config {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 300, WALRetention: -1, WALMaxBatch: 8}
	fillLedger(t, cfg, 1000)
	for range 2 {
		l, err := Open(cfg)
		require.NoError(t, err)
		require.NoError(t, l.Close())
	}
	return cfg
}

// The index holds each transaction once, in id order, across the reopens
// (a regression: Open wrote the refs it replayed in runs cut at other ids
// than the Snapshotter's, so they overlapped), and verify finds nothing.
func TestVerifyRefIndexClean(t *testing.T) {
	cfg := refFixture(t)
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		var prev uint64
		n := 0
		for _, r := range readStoredRuns(t, db) {
			for _, e := range r.entries {
				require.Greater(t, e.id, prev, "tx %d in the index after tx %d", e.id, prev)
				prev = e.id
				n++
			}
		}
		require.Equal(t, 400, n) // refs of cases 0 and 1; case 4 is a Duplicate
		from, err := readDedupFrom(db)
		require.NoError(t, err)
		require.Equal(t, uint64(1), from)
	})
	_, err := verifyDir(nil, cfg.Dir)
	require.NoError(t, err)
}

// Each inconsistency between the index and the WAL is one finding naming
// where the first instance is, with the count.
func TestVerifyRefIndexFindings(t *testing.T) {
	for name, tc := range map[string]struct {
		damage func(t *testing.T, db *pebble.DB, runs []storedRun) (at []byte, first TxID)
		walLoc bool   // the finding names the WAL record, not the run
		reason string // its start
	}{
		"entry names another ref": {
			damage: func(t *testing.T, db *pebble.DB, runs []storedRun) ([]byte, TxID) {
				r := runs[1]
				r.entries[0].ref++
				writeStoredRun(t, db, r)
				return r.key, TxID(r.entries[0].id)
			},
			reason: "dedup index names ref",
		},
		"entry for a Duplicate": {
			damage: func(t *testing.T, db *pebble.DB, runs []storedRun) ([]byte, TxID) {
				r := runs[0]
				require.Equal(t, uint64(1), r.entries[0].id)
				require.Equal(t, uint64(2), r.entries[1].id)
				// tx 5 (a Duplicate of tx 1) listed with tx 1's ref.
				e := append([]refUse{}, r.entries[:2]...)
				e = append(e, refUse{id: 5, ref: r.entries[0].ref})
				r.entries = append(e, r.entries[2:]...)
				writeStoredRun(t, db, r)
				return r.key, 5
			},
			reason: "dedup index names ref 1000 for tx 5, a Duplicate of tx 1",
		},
		"run missing": {
			damage: func(t *testing.T, db *pebble.DB, runs []storedRun) ([]byte, TxID) {
				r := runs[len(runs)/2]
				require.NoError(t, db.Delete(r.key, pebble.Sync))
				return nil, TxID(r.entries[0].id)
			},
			walLoc: true,
			reason: "ref ",
		},
		"entry repeated": {
			damage: func(t *testing.T, db *pebble.DB, runs []storedRun) ([]byte, TxID) {
				r := runs[2]
				r.entries = append(r.entries, runs[1].entries[len(runs[1].entries)-1])
				r.entries[len(r.entries)-1].id = r.entries[len(r.entries)-2].id
				writeStoredRun(t, db, r)
				return r.key, TxID(r.entries[len(r.entries)-1].id)
			},
			reason: "dedup index lists tx",
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := refFixture(t)
			var key []byte
			var first TxID
			withDB(t, cfg.Dir, func(db *pebble.DB) {
				runs := readStoredRuns(t, db)
				require.Greater(t, len(runs), 4)
				key, first = tc.damage(t, db, runs)
			})
			rep, err := verifyDir(nil, cfg.Dir)
			require.ErrorIs(t, err, ErrCorrupt)
			require.Len(t, rep.Findings, 1, "%v", err)
			f := rep.Findings[0]
			require.Equal(t, first, f.FirstTx, "%v", f)
			require.Contains(t, f.Reason, tc.reason)
			if tc.walLoc {
				require.Nil(t, f.Key)
				require.Contains(t, f.File, walDir+"/")
				require.Contains(t, f.Reason, "missing from the dedup index")
			} else {
				require.Equal(t, key, f.Key)
			}
		})
	}
}

// An Open with the index off deletes its start, so refs it did not index
// are no finding; the next Open with the index on starts it again after
// its snapshot. A pruned index is checked from its first entry.
func TestVerifyRefIndexOffAndPruned(t *testing.T) {
	cfg := refFixture(t)
	off := cfg
	off.DedupRetention = -1
	l, err := Open(off)
	require.NoError(t, err)
	fill(t, l, 700, 5000)
	require.NoError(t, l.Close())
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		from, err := readDedupFrom(db)
		require.NoError(t, err)
		require.Zero(t, from)
	})
	_, err = verifyDir(nil, cfg.Dir)
	require.NoError(t, err)

	pruned := cfg
	pruned.DedupWindow, pruned.DedupRetentionTxs = 64, 200
	l, err = Open(pruned)
	require.NoError(t, err)
	snap := l.recovered.snapshot
	fill(t, l, 900, 9000)
	require.NoError(t, l.Close())
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		from, err := readDedupFrom(db)
		require.NoError(t, err)
		require.Equal(t, snap+1, from)
		runs := readStoredRuns(t, db)
		require.Greater(t, runs[0].entries[0].id, from, "nothing pruned")
	})
	_, err = verifyDir(nil, cfg.Dir)
	require.NoError(t, err)
}

// fill submits n deposits with refs from ref on and waits for them to be
// applied.
func fill(t *testing.T, l *Ledger, n int, ref uint64) {
	t.Helper()
	var last TxID
	for i := range n {
		id, err := l.Submit(Deposit{Account: 1 + uint64(i)%7, Amount: 1, UserRef: ref + uint64(i)})
		require.NoError(t, err)
		last = id
	}
	require.NoError(t, l.Wait(t.Context(), last, Snapshot))
}
