package ledger

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"
)

type ledgerState struct {
	x       Indexes
	bal     []int64
	results []Result
}

func captureState(t *testing.T, l *Ledger) ledgerState {
	t.Helper()
	x, err := l.Indexes()
	require.NoError(t, err)
	s := ledgerState{x: x}
	for a := range l.cfg.MaxAccounts {
		b, err := l.Balance(a)
		require.NoError(t, err)
		s.bal = append(s.bal, b)
	}
	for id := TxID(1); id <= x.Committed; id++ {
		r, err := l.Result(id)
		require.NoError(t, err)
		s.results = append(s.results, r)
	}
	return s
}

func submitMany(t *testing.T, l *Ledger, n int, seed uint64) TxID {
	t.Helper()
	var last TxID
	for i := range n {
		var op Op = Deposit{Account: 1 + (seed+uint64(i))%7, Amount: 1 + uint64(i)%13, UserRef: seed*1_000_000 + uint64(i)}
		if i%3 == 1 {
			op = Transfer{From: 1 + uint64(i)%7, To: 1 + (uint64(i)+1)%7, Amount: 5}
		}
		id, err := l.Submit(op)
		require.NoError(t, err)
		last = id
	}
	require.NoError(t, l.Wait(context.Background(), last, Snapshot))
	return last
}

func TestReopenIdentical(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1}
	l, err := Open(cfg)
	require.NoError(t, err)
	submitMany(t, l, 500, 1)
	before := captureState(t, l)
	require.NoError(t, l.Close())

	l, err = Open(cfg)
	require.NoError(t, err)
	defer l.Close()
	require.Equal(t, uint64(500), l.recovered.replayed)
	require.Equal(t, before, captureState(t, l))
	// Idempotency survives the restart.
	r, err := l.SubmitAndWait(context.Background(), Deposit{Account: 3, Amount: 9, UserRef: 1_000_000 + 42}, Committed)
	require.NoError(t, err)
	require.Equal(t, Duplicate, r.Fail)
	require.Equal(t, TxID(43), r.DupOf)
	require.Equal(t, TxID(501), r.ID)
}

func TestReopenSnapshotPlusWAL(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 300, DedupWindow: 10_000}
	l, err := Open(cfg)
	require.NoError(t, err)
	submitMany(t, l, 1000, 1)
	submitMany(t, l, 50, 2) // fewer than SnapshotEvery: stays in the WAL only
	before := captureState(t, l)
	require.NoError(t, l.Close()) // waits for an in-progress snapshot

	l, err = Open(cfg)
	require.NoError(t, err)
	rec := l.recovered
	require.Positive(t, rec.snapshot)
	// Usually <= 1000, but a snapshot skipped while the previous one was
	// still being written is taken at a later batch, possibly the last.
	require.LessOrEqual(t, rec.snapshot, uint64(1050))
	require.Equal(t, 1050-rec.snapshot, rec.replayed)
	require.Equal(t, before, captureState(t, l))
	// A ref first used before the snapshot, and one after it.
	for _, i := range []uint64{9, 999} {
		r, err := l.SubmitAndWait(context.Background(), Deposit{Account: 2, Amount: 1, UserRef: 1_000_000 + i}, Computed)
		require.NoError(t, err)
		require.Equal(t, Duplicate, r.Fail, "ref %d", i)
		require.Equal(t, TxID(i+1), r.DupOf)
	}
	require.NoError(t, l.Close())
}

func TestRetentionPrunesWAL(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 200, WALRetention: 100, WALMaxBatch: 16}
	l, err := Open(cfg)
	require.NoError(t, err)
	last := submitMany(t, l, 2000, 1)
	want, err := l.Result(last)
	require.NoError(t, err)
	x0, _ := l.Indexes()
	var bal []int64
	for a := range uint64(8) {
		b, _ := l.Balance(a)
		bal = append(bal, b)
	}
	require.NoError(t, l.Close())
	l, err = Open(cfg)
	require.NoError(t, err)
	defer l.Close()
	_, err = l.Result(1)
	require.ErrorIs(t, err, ErrNotFound)
	r, err := l.Result(last)
	require.NoError(t, err)
	require.Equal(t, want, r)
	x, _ := l.Indexes()
	require.Equal(t, x0, x)
	for a := range uint64(8) {
		b, _ := l.Balance(a)
		require.Equal(t, bal[a], b)
	}
}

func TestIncompatibleDirectory(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Config{Dir: dir, MaxAccounts: 8})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	_, err = Open(Config{Dir: dir, MaxAccounts: 9})
	require.ErrorIs(t, err, ErrIncompatible)
	_, err = Open(Config{Dir: dir}) // default MaxAccounts differs too
	require.ErrorIs(t, err, ErrIncompatible)
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Dir: "x", MaxAccounts: 1},
		{Dir: "x", RingSize: -1},
		{Dir: "x", WALMaxBatch: -3},
		{Dir: "x", MaxEntries: MaxLegs + 1},
		{Dir: "x", WaitStrategy: 9},
	} {
		_, err := Open(cfg)
		require.ErrorIs(t, err, ErrConfig, "%+v", cfg)
	}
}

// withDB runs f on the closed ledger directory's pebble store.
func withDB(t *testing.T, dir string, f func(db *pebble.DB)) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	require.NoError(t, err)
	f(db)
	require.NoError(t, db.Close())
}

func walKeys(t *testing.T, db *pebble.DB) [][]byte {
	it, err := prefixIter(db, prefixWAL)
	require.NoError(t, err)
	var keys [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, clone(it.Key()))
	}
	require.NoError(t, it.Close())
	return keys
}

func TestTornTailDiscarded(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1}
	l, err := Open(cfg)
	require.NoError(t, err)
	last := submitMany(t, l, 50, 1)
	require.NoError(t, l.Close())
	torn := idKey(prefixWAL, uint64(last)+1)
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		// An incomplete batch: a valid header claiming 10 txs, cut short.
		val, _ := encodeBatch(nil, []txRecord{{id: uint64(last) + 1, kind: KindDeposit, n: 2,
			inline: [2]Entry{{0, -1, -1}, {1, 1, 1}}}}, walMaxBytes)
		require.NoError(t, db.Set(torn, val[:len(val)-5], pebble.Sync))
	})
	l, err = Open(cfg)
	require.NoError(t, err)
	require.Equal(t, torn, l.recovered.torn)
	x, _ := l.Indexes()
	require.Equal(t, last, x.Committed)
	id, err := l.Submit(Deposit{Account: 1, Amount: 1})
	require.NoError(t, err)
	require.Equal(t, last+1, id)
	require.NoError(t, l.Close())
}

func TestCorruptMiddleRefusesToOpen(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALMaxBatch: 8}
	l, err := Open(cfg)
	require.NoError(t, err)
	submitMany(t, l, 200, 1)
	require.NoError(t, l.Close())
	var bad, next []byte
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		keys := walKeys(t, db)
		require.Greater(t, len(keys), 3)
		bad, next = keys[1], keys[2]
		v, closer, err := db.Get(bad)
		require.NoError(t, err)
		v = clone(v)
		closer.Close()
		v[len(v)-1] ^= 0xff
		require.NoError(t, db.Set(bad, v, pebble.Sync))
	})
	_, err = Open(cfg)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.ErrorIs(t, err, ErrCorrupt)
	first, _ := parseIDKey(prefixWAL, bad)
	nf, _ := parseIDKey(prefixWAL, next)
	require.Equal(t, bad, ce.Key)
	require.Equal(t, TxID(first), ce.FirstTx)
	require.Equal(t, TxID(nf-1), ce.LastTx)
	require.Contains(t, ce.Error(), "checksum")
}

func TestInconsistentBalanceRefusesToOpen(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1}
	l, err := Open(cfg)
	require.NoError(t, err)
	last := submitMany(t, l, 20, 1)
	require.NoError(t, l.Close())
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		// Checksummed, well-formed, but its resulting balance is wrong.
		val, _ := encodeBatch(nil, []txRecord{{id: uint64(last) + 1, kind: KindDeposit, n: 2,
			inline: [2]Entry{{0, -1, 12345}, {1, 1, 1}}}}, walMaxBytes)
		require.NoError(t, db.Set(idKey(prefixWAL, uint64(last)+1), val, pebble.Sync))
	})
	_, err = Open(cfg)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, last+1, ce.FirstTx)
}

func TestOtherFormatVersionRefused(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8}
	l, err := Open(cfg)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		rec, err := encodeMsgpack(meta{FormatVersion: formatVersion + 1, MaxAccounts: 8, Fingerprint: fingerprint(8)})
		require.NoError(t, err)
		require.NoError(t, db.Set(metaKey, rec, pebble.Sync))
	})
	_, err = Open(cfg)
	require.ErrorIs(t, err, ErrIncompatible)
	require.Contains(t, err.Error(), "format version")
}
