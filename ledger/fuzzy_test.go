package ledger

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lanework/lanework/ledger/internal/offline"
	"github.com/stretchr/testify/require"
)

// fuzzyAccounts spans three snapshot chunks.
const fuzzyAccounts = 3 * snapChunkAccounts

// fuzzyOps are transactions touching accounts in all three chunks, with
// UserRefs from ref on (every fourth op resubmits an earlier ref).
func fuzzyOps(rng *rand.Rand, n int, ref uint64) []Op {
	hot := []uint64{5, 6, snapChunkAccounts + 7, 2*snapChunkAccounts + 9, fuzzyAccounts - 1}
	ops := make([]Op, n)
	for i := range ops {
		a, b := hot[rng.IntN(len(hot))], hot[rng.IntN(len(hot))]
		r := ref + uint64(i)
		switch {
		case i%4 == 3:
			ops[i] = Deposit{Account: a, Amount: 1, UserRef: r - 3} // a Duplicate
		case a == b || i%2 == 0:
			ops[i] = Deposit{Account: a, Amount: 100 + uint64(i), UserRef: r}
		default:
			ops[i] = Transfer{From: a, To: b, Amount: 7, UserRef: r}
		}
	}
	return ops
}

// submitAcked submits ops one by one, waits for each to be Committed and
// returns the acknowledged results.
func submitAcked(t *testing.T, l *Ledger, ops []Op) []Result {
	t.Helper()
	out := make([]Result, len(ops))
	for i, op := range ops {
		r, err := l.SubmitAndWait(context.Background(), op, Committed)
		require.NoError(t, err)
		out[i] = r
	}
	return out
}

// checkRecovered opens cfg and checks that it holds exactly the acked
// results, the given balances (nil: skip) and the dedup window (every acked
// non-duplicate UserRef resubmitted is a Duplicate naming its original);
// then Verify is clean. It returns what recovery reported.
func checkRecovered(t *testing.T, cfg Config, acks []Result, bal []int64) recoveryInfo {
	t.Helper()
	l, err := Open(cfg)
	require.NoError(t, err)
	rec := l.recovered
	for _, want := range acks {
		got, err := l.Result(want.ID)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	for a, b := range bal {
		got, err := l.Balance(uint64(a))
		require.NoError(t, err)
		require.Equal(t, b, got, "account %d", a)
	}
	var sum int64
	for a := range cfg.MaxAccounts {
		b, _ := l.Balance(a)
		sum += b
	}
	require.Zero(t, sum)
	orig := map[uint64]TxID{}
	for _, r := range acks {
		if r.UserRef != 0 && r.Fail != Duplicate {
			orig[r.UserRef] = r.ID
		}
	}
	for ref, id := range orig {
		r, err := l.SubmitAndWait(context.Background(), Deposit{Account: 1, Amount: 1, UserRef: ref}, Computed)
		require.NoError(t, err)
		require.Equal(t, Duplicate, r.Fail, "ref %d", ref)
		require.Equal(t, id, r.DupOf, "ref %d", ref)
	}
	require.NoError(t, l.Close())
	rep, err := verifyDir(cfg.FS, cfg.Dir)
	require.NoError(t, err)
	for _, s := range rep.Snapshots {
		require.True(t, s.Valid, "%+v", s)
	}
	return rec
}

// TestFuzzySnapshotWhileStreaming holds the persister after the first
// chunk of a requested snapshot while transactions touching every chunk
// stream in and are applied, so the snapshot's chunks hold balances from
// both sides of its start. The directory recovers exactly (balances,
// results, dedup) after a clean reopen and from crash clones taken in the
// middle of the snapshot and right after it became durable.
func TestFuzzySnapshotWhileStreaming(t *testing.T) {
	mem := vfs.NewCrashableMem()
	// Small segments: a MemFS sync copies the whole file.
	cfg := Config{Dir: "ledger", FS: mem, MaxAccounts: fuzzyAccounts, SnapshotEvery: -1, DedupWindow: 1 << 12, WALSegmentSize: 256 << 10}
	l, err := Open(cfg)
	require.NoError(t, err)
	createAccounts(t, l, fuzzyAccounts) // account a in slot a: cells 4a..4a+3
	rng := rand.New(rand.NewPCG(3, 4))
	ref := uint64(1)
	acks := submitAcked(t, l, fuzzyOps(rng, 200, ref))
	ref += 200

	reached, resume := make(chan struct{}), make(chan struct{})
	hook := func(chunk uint32) {
		if chunk == 0 {
			reached <- struct{}{}
			<-resume
		}
	}
	l.snapHook.Store(&hook)
	snapDone := make(chan TxID, 1)
	go func() {
		id, err := l.Snapshot(context.Background())
		if err != nil {
			id = 0
		}
		snapDone <- id
	}()
	<-reached
	s0 := l.snapshot.Load() // nothing was submitted since the request
	// Stream while chunk 0 is written and chunks 1 and 2 are not read yet.
	during := submitAcked(t, l, fuzzyOps(rng, 300, ref))
	ref += 300
	acks = append(acks, during...)
	require.NoError(t, l.Wait(context.Background(), during[len(during)-1].ID, Snapshot))
	midAcks := append([]Result(nil), acks...)
	mid := []*vfs.MemFS{mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}), mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 1))})}
	close(resume)
	id := <-snapDone
	require.Equal(t, TxID(s0), id, "the snapshot starts where the Snapshotter stood")
	l.snapHook.Store(nil)
	postAcks := append([]Result(nil), acks...)
	post := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	acks = append(acks, submitAcked(t, l, fuzzyOps(rng, 100, ref))...)
	// Balance reflects the Snapshot index, which may still be behind the
	// last Committed ack.
	require.NoError(t, l.Wait(context.Background(), acks[len(acks)-1].ID, Snapshot))
	want := make([]int64, fuzzyAccounts)
	for a := range want {
		want[a], _ = l.Balance(uint64(a))
	}
	require.NoError(t, l.Close())

	// The manifest records the window, and the chunks really are fuzzy:
	// chunk 0 was read before the streamed transactions, the last after.
	last := uint64(fuzzyAccounts - 1)
	five, lastCell := cell(5, CreditsPosted), cell(last, CreditsPosted)
	lastChunk := uint32(lastCell / snapChunkAccounts)
	var m manifest
	var c0, cN []int64
	withMemDB(t, mem, cfg.Dir, func(db *pebble.DB) {
		v, closer, err := db.Get(idKey(prefixSnapshot, uint64(s0)))
		require.NoError(t, err)
		m, err = decodeManifest(v)
		closer.Close()
		require.NoError(t, err)
		c0, cN = readChunk(t, db, uint64(s0), 0), readChunk(t, db, uint64(s0), lastChunk)
	})
	require.Equal(t, uint64(s0), m.TxID)
	require.Equal(t, uint64(fuzzyAccounts), m.Accounts)
	require.GreaterOrEqual(t, m.TxEnd, uint64(during[len(during)-1].ID), "window covers the streamed transactions")
	atS0, atS1 := cellsAt(acks, uint64(s0)), cellsAt(acks, m.TxEnd)
	require.Equal(t, atS0[five], c0[five], "chunk 0 read before the stream")
	require.NotEqual(t, atS1[five], c0[five], "and account 5 changed during the copy")
	require.Equal(t, atS1[lastCell], cN[lastCell-uint64(lastChunk)*snapChunkAccounts], "the last chunk read after the stream")
	require.NotEqual(t, atS0[lastCell], atS1[lastCell])

	rec := checkRecovered(t, cfg, acks, want)
	require.Equal(t, uint64(s0), rec.snapshot)
	require.Equal(t, m.TxEnd, rec.snapEnd)
	require.Equal(t, uint64(acks[len(acks)-1].ID)-uint64(s0), rec.replayed, "replays from S0+1")

	for i, fs := range mid {
		c := cfg
		c.FS = fs
		rec := checkRecovered(t, c, midAcks, nil)
		require.Zero(t, rec.snapshot, "clone %d: the manifest was not written yet", i)
	}
	c := cfg
	c.FS = post
	rec = checkRecovered(t, c, postAcks, balancesAt(postAcks, uint64(postAcks[len(postAcks)-1].ID)))
	require.Equal(t, uint64(s0), rec.snapshot, "the durable fuzzy snapshot is loaded after a crash")
}

// cellsAt replays acknowledged results up to tx id (they must be all the
// transactions with entries, in order) into cells, account a in slot a.
func cellsAt(acks []Result, id uint64) []int64 {
	c := make([]int64, cellsPerAccount*fuzzyAccounts)
	for _, r := range acks {
		if uint64(r.ID) > id {
			break
		}
		for _, e := range r.Entries {
			c[cell(e.Account, e.Column)] = e.Value
		}
	}
	return c
}

// balancesAt is cellsAt as posted balances.
func balancesAt(acks []Result, id uint64) []int64 {
	c := cellsAt(acks, id)
	bal := make([]int64, fuzzyAccounts)
	for a := range bal {
		bal[a] = c[cell(uint64(a), CreditsPosted)] - c[cell(uint64(a), DebitsPosted)]
	}
	return bal
}

func readChunk(t *testing.T, db *pebble.DB, snap uint64, i uint32) []int64 {
	v, closer, err := db.Get(chunkKey(snap, i))
	require.NoError(t, err)
	defer closer.Close()
	first := uint64(i) * snapChunkAccounts
	out, err := decodeCellChunk(v, first, min(snapChunkAccounts, cellsPerAccount*fuzzyAccounts-first), nil)
	require.NoError(t, err)
	return out
}

func withMemDB(t *testing.T, fs vfs.FS, dir string, f func(db *pebble.DB)) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{FS: fs, Logger: quietLogger{}})
	require.NoError(t, err)
	f(db)
	require.NoError(t, db.Close())
}

// writeClaim recovers the 8-account ledger in db and writes a snapshot of
// its balances that claims to start at txID and to have been read through
// transaction 100 (the fuzzy window (txID, 100]), with the dedup window if
// refs; edit, if not nil, changes the recovered state first.
func writeClaim(t *testing.T, db *pebble.DB, cfg *Config, txID uint64, refs bool, edit func(*recovered)) *recovered {
	t.Helper()
	r, err := recoverState(db, &Config{Dir: cfg.Dir, MaxAccounts: 8, DedupWindow: DefaultDedupWindow})
	require.NoError(t, err)
	if edit != nil {
		edit(r)
	}
	sd := &snapshotData{txID: txID}
	if refs {
		sd.refs = r.refs
	}
	sd.accounts = r.accts.n
	_, err = writeSnapshot(db, cfg, sd, r.bal, func() uint64 { return 100 }, nil, nil)
	require.NoError(t, err)
	return r
}

// filledTo100 fills the ledger of cfg with 100 transactions, closes it, and
// returns the indexes and balances it reopens to: the truth a forged
// snapshot is judged against.
func filledTo100(t *testing.T, cfg Config) (Indexes, []int64) {
	t.Helper()
	fillLedger(t, cfg, 100)
	_, x, bal, err := openState(t, cfg)
	require.NoError(t, err)
	return x, bal
}

// TestFuzzySnapshotInconsistentRefused: a checksum-valid snapshot whose
// chunk value was never the account's balance in its window is refused,
// naming the snapshot, by Open and by Verify.
func TestFuzzySnapshotInconsistentRefused(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALRetention: -1}
	fillLedger(t, cfg, 100)
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		// Claim the snapshot started at 90 with balances read up to 100;
		// account 3 gets a value it never had.
		writeClaim(t, db, &cfg, 90, false, func(r *recovered) { r.bal[cell(3, CreditsPosted)].Add(1_000_000) })
	})
	_, err := Open(cfg)
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, idKey(prefixSnapshot, 90), ce.Key)
	rep, err := verifyDir(nil, cfg.Dir)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Equal(t, idKey(prefixSnapshot, 90), rep.Findings[0].Key)
	require.Equal(t, []snapshotCheck{{TxID: 90, Valid: true}}, rep.Snapshots)
}

// TestFuzzySnapshotWindowConsistent: the same fuzzy claim with the true
// balances at 100 (every account's value is one of its balances in
// 91..100) opens to the true state and verifies.
func TestFuzzySnapshotWindowConsistent(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALRetention: -1}
	wantX, wantBal := filledTo100(t, cfg)
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		writeClaim(t, db, &cfg, 90, false, nil)
	})
	rep, err := verifyDir(nil, cfg.Dir)
	require.NoError(t, err)
	require.Equal(t, []snapshotCheck{{TxID: 90, Valid: true, Replayed: true}}, rep.Snapshots)
	rec, x, bal, err := openState(t, cfg)
	require.NoError(t, err)
	require.Equal(t, uint64(90), rec.snapshot)
	require.Equal(t, uint64(100), rec.snapEnd)
	require.Equal(t, wantX, x)
	require.Equal(t, wantBal, bal)
}

// TestOldFormatRefused: a directory of format 1, 2 or 3 (dense accounts)
// is refused by Open, Verify and Dump with ErrIncompatible and a message
// saying how to move its balances, and nothing in it changes.
func TestOldFormatRefused(t *testing.T) {
	for v := 1; v <= formatVersionV3; v++ {
		cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1}
		fillLedger(t, cfg, 20)
		downgrade(t, cfg.Dir, v)
		before := dirDigest(t, cfg.Dir)
		_, err := Open(cfg)
		require.ErrorIs(t, err, ErrIncompatible)
		require.ErrorContains(t, err, fmt.Sprintf("%s has format %d", cfg.Dir, v))
		require.ErrorContains(t, err, "ledger dump")
		require.ErrorContains(t, err, "ledger account create")
		_, err = verifyDir(nil, cfg.Dir)
		require.ErrorIs(t, err, ErrIncompatible)
		require.ErrorIs(t, dumpDir(nil, cfg.Dir, 1, 0, func(*offline.Tx) error { return nil }), ErrIncompatible)
		require.Equal(t, before, dirDigest(t, cfg.Dir))
	}
}

var memoryAccounts = flag.Uint64("ledger.memory-accounts", 1<<19, "accounts TestMemoryPerAccount creates in its larger ledger (e.g. 10000000)")

// TestMemoryPerAccount: the ledger's memory grows per account by what the
// account table and the cells cost and nothing else: 32 bytes of metadata,
// twice 32 of cells (four columns, working and readable) and 16 bytes per
// index entry, the index holding
// between 1.5 and 3 entries per account of MaxAccounts. It measures the heap
// in use after creating MaxAccounts-1 accounts with sparse random ids in a
// ledger of 1/4 of -ledger.memory-accounts and in one of all of them, and
// compares the difference per account with that sum. Before created
// accounts it was 8 bytes (one balance).
func TestMemoryPerAccount(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 640Ki accounts")
	}
	if raceEnabled {
		// Under the race detector pebble allocates its manual memory
		// (memtables, block cache) on the Go heap half of the time
		// (internal/manual), where the account records the Snapshotter
		// writes then count.
		t.Skip("heap in use includes pebble's memory under -race")
	}
	heapAfterCreate := func(accounts uint64) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		// The history and query indexes live in pebble, not in these
		// tables, and their writers' buffers would add megabytes that
		// differ from run to run.
		l, err := Open(Config{Dir: t.TempDir(), MaxAccounts: accounts, SnapshotEvery: -1})
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(accounts, 1))
		ops := make([]Op, 0, 4096)
		var last TxID
		for n := uint64(1); n < accounts; n++ {
			ops = append(ops, CreateAccount{ID: 1 + rng.Uint64N(1<<63), Ledger: 1})
			if len(ops) == cap(ops) || n == accounts-1 {
				_, last, err = l.SubmitBatch(ops)
				require.NoError(t, err)
				ops = ops[:0]
				// One batch at a time: the Snapshotter's reused buffers
				// then grow to the same size in every run, whatever
				// groups the pipeline would have made (megabytes apart).
				require.NoError(t, l.Wait(context.Background(), last, Snapshot))
			}
		}
		require.NoError(t, l.Wait(context.Background(), last, Snapshot))
		st := l.Stats()
		require.Equal(t, accounts-1, st.Outcomes[KindCreateAccount][OK], "ids collided")
		runtime.GC()
		runtime.ReadMemStats(&after)
		require.NoError(t, l.Close())
		return after.HeapInuse - before.HeapInuse
	}
	indexBytes := func(accounts uint64) uint64 { return 16 * uint64(len(newAccountTable(accounts).index)) }
	large := *memoryAccounts
	small := large / 4
	hs, hl := heapAfterCreate(small), heapAfterCreate(large)
	perAccount := float64(int64(hl)-int64(hs)) / float64(large-small)
	want := float64(96*(large-small)+indexBytes(large)-indexBytes(small)) / float64(large-small)
	t.Logf("heap in use after creating %d accounts: %d B; %d accounts: %d B: %.2f B per account (metadata 32, working and readable cells 2 x 32, index %.2f)",
		small-1, hs, large-1, hl, perAccount, want-96)
	require.InDelta(t, want, perAccount, 3)
}

// TestFuzzySnapshotAnchorsPrunedWAL: with the WAL before a fuzzy snapshot
// pruned, the snapshot anchors Verify's replay (an account's first entry in
// its window sets the balance) and Open recovers the true state from it.
func TestFuzzySnapshotAnchorsPrunedWAL(t *testing.T) {
	for _, bad := range []bool{false, true} {
		fuzzyAnchor(t, bad)
	}
}

// fuzzyAnchor is TestFuzzySnapshotAnchorsPrunedWAL; bad gives account 3 a
// chunk value it never had, which both Verify and Open must report.
func fuzzyAnchor(t *testing.T, bad bool) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALRetention: -1, WALMaxBatch: 8}
	wantX, wantBal := filledTo100(t, cfg)
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		r, err := recoverState(db, &Config{Dir: cfg.Dir, MaxAccounts: 8, DedupWindow: DefaultDedupWindow})
		require.NoError(t, err)
		if bad {
			r.bal[cell(3, CreditsPosted)].Add(1_000_000)
			r.bal[cell(0, DebitsPosted)].Add(1_000_000)
		}
		// Balances read as of 100 for a snapshot started at 90.
		_, err = writeSnapshot(db, &cfg, &snapshotData{txID: 90, accounts: r.accts.n}, r.bal, func() uint64 { return 100 }, nil, nil)
		require.NoError(t, err)
	})
	rewriteWALFrom(t, cfg.Dir, 91) // the batch holding 91 stays
	rep, err := verifyDir(nil, cfg.Dir)
	if bad {
		require.ErrorIs(t, err, ErrCorrupt)
		require.Equal(t, idKey(prefixSnapshot, 90), rep.Findings[0].Key)
		_, err = Open(cfg)
		var ce *CorruptError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, idKey(prefixSnapshot, 90), ce.Key)
		return
	}
	require.NoError(t, err)
	require.Equal(t, []snapshotCheck{{TxID: 90, Valid: true}}, rep.Snapshots, "anchoring, not compared")
	require.Greater(t, rep.FirstTx, TxID(1))
	rec, x, bal, err := openState(t, cfg)
	require.NoError(t, err)
	require.Equal(t, uint64(90), rec.snapshot)
	require.Equal(t, wantX, x)
	require.Equal(t, wantBal, bal)
}
