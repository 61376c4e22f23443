package ledger

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lanework/lanework/ledger/internal/wal"
)

var (
	benchHistoryTxs  = flag.Int("ledger.history-txs", 1_000_000, "transactions in the ledger BenchmarkAccountTransfers reads (the bar: 10,000,000)")
	benchHistoryRate = flag.Int("ledger.history-rate", 100_000, "transactions per second BenchmarkAccountTransfers writes while it reads")
	benchCatchUpTxs  = flag.Int("ledger.catchup-txs", 1_000_000, "transactions BenchmarkIndexCatchUp replays into the index")
	benchIndexAccts  = flag.Uint64("ledger.index-accounts", 1_000_000, "accounts of BenchmarkSubmitIndex and BenchmarkIndexCatchUp (fewer for callgrind)")
)

// createFlagged creates accounts 1..n-1 in ledger 1 with flags.
func createFlagged(b *testing.B, l *Ledger, n uint64, flags func(id uint64) AccountFlags) {
	b.Helper()
	batch := make([]Op, 0, 4096)
	for a := uint64(1); a < n; a++ {
		batch = append(batch, CreateAccount{ID: a, Ledger: 1, Flags: flags(a)})
		if len(batch) == cap(batch) || a == n-1 {
			if _, _, err := l.SubmitBatch(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// quiesce waits until pebble has no compaction running or owed: the
// account creations of the set-up leave some, which would otherwise run
// during the timed transfers of one variant and not of another.
func quiesce(b *testing.B, l *Ledger) {
	b.Helper()
	last, still := int64(-1), 0
	for range 1200 {
		m := l.db.Metrics()
		if m.Compact.NumInProgress == 0 && m.Compact.Count == last {
			if still++; still == 10 { // a second without a compaction
				return
			}
		} else {
			still = 0
		}
		last = m.Compact.Count
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatal("compactions did not finish")
}

// BenchmarkSubmitIndex is BenchmarkSubmit (deposits and transfers over 1M
// accounts, durable throughput from one submitter) with the index off, on
// (no account keeps history: blocks and postings only) and on with every
// account keeping history (a history record per account per transfer, the
// most the index writes). The bar compares on with off.
func BenchmarkSubmitIndex(b *testing.B) {
	for _, c := range []struct {
		name    string
		on      bool
		history AccountFlags
	}{{"off", false, 0}, {"on", true, 0}, {"history-all", true, History}} {
		b.Run(c.name, func(b *testing.B) {
			n := *benchIndexAccts
			l, err := Open(Config{Dir: b.TempDir(), MaxAccounts: n, Index: c.on})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			createFlagged(b, l, n, func(uint64) AccountFlags { return c.history })
			settle(b, l)
			quiesce(b, l)
			ops := benchOps(1<<16, n)
			b.ReportAllocs()
			submitCommitted(b, l, ops) // reports tx/s and cpu-ns/op: the process's CPU per transaction
			// The index follows at the Snapshot index: report how far
			// behind Committed it ended.
			x := l.indexes()
			b.ReportMetric(float64(x.Committed-x.Snapshot), "index-lag-tx")
		})
	}
}

// BenchmarkAccountTransfers is the read bar: the newest 1,000 transfers of
// one History account, in a ledger of -ledger.history-txs transactions
// (one in 50 involves the account), while a writer offers
// -ledger.history-rate tx/s. Each op is one AccountTransfers call;
// p50-ns and p99-ns are over all calls.
func BenchmarkAccountTransfers(b *testing.B) {
	f := AccountFilter{Debits: true, Credits: true, Limit: 1000, Reverse: true}
	benchReadsUnderWrites(b, func(ctx context.Context, l *Ledger, _ *rand.Rand) error {
		p, err := l.AccountTransfers(ctx, benchHot, f)
		if err == nil && len(p.Transfers) != 1000 {
			err = fmt.Errorf("%d transfers", len(p.Transfers))
		}
		return err
	})
}

// BenchmarkQueryTransfers is BenchmarkAccountTransfers' read ledger-wide,
// through the blocks: the newest 1,000 transfers of the ledger.
func BenchmarkQueryTransfers(b *testing.B) {
	f := TransferFilter{Limit: 1000, Reverse: true}
	benchReadsUnderWrites(b, func(ctx context.Context, l *Ledger, _ *rand.Rand) error {
		p, err := l.QueryTransfers(ctx, f)
		if err == nil && len(p.Transfers) != 1000 {
			err = fmt.Errorf("%d transfers", len(p.Transfers))
		}
		return err
	})
}

// BenchmarkLookupTransfers is BenchmarkAccountTransfers' ledger with a
// lookup of 100 transactions anywhere in it (a block each, mostly).
func BenchmarkLookupTransfers(b *testing.B) {
	ids := make([]TxID, 100)
	benchReadsUnderWrites(b, func(ctx context.Context, l *Ledger, rng *rand.Rand) error {
		for i := range ids {
			ids[i] = TxID(1 + rng.Uint64N(uint64(*benchHistoryTxs)))
		}
		r, _, err := l.LookupTransfers(ctx, ids, 0)
		for i := range r {
			if err == nil && (r[i] == nil || r[i].ID != ids[i]) {
				err = fmt.Errorf("lookup of tx %d: %v", ids[i], r[i])
			}
		}
		return err
	})
}

// benchHot is the History account of benchReadsUnderWrites' ledger.
const benchHot = 1

// benchReadsUnderWrites times read, in a ledger of -ledger.history-txs
// deposits and transfers over 100k accounts (one in 50 a transfer to the
// History account benchHot), while a writer offers -ledger.history-rate
// tx/s; p50-ns and p99-ns are over all calls.
func benchReadsUnderWrites(b *testing.B, read func(context.Context, *Ledger, *rand.Rand) error) {
	const accounts = 100_000
	l, err := Open(Config{Dir: b.TempDir(), MaxAccounts: accounts, Index: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	createFlagged(b, l, accounts, func(id uint64) AccountFlags {
		if id == benchHot {
			return History
		}
		return 0
	})
	rng := rand.New(rand.NewPCG(1, 2))
	op := func() Op {
		a := 2 + rng.Uint64N(accounts-2)
		if rng.IntN(50) == 0 {
			return Transfer{From: a, To: benchHot, Amount: 1}
		}
		return Deposit{Account: a, Amount: 1 + rng.Uint64N(100)}
	}
	batch := make([]Op, 4096)
	var last TxID
	for n := 0; n < *benchHistoryTxs; n += len(batch) {
		for i := range batch {
			batch[i] = op()
		}
		if _, last, err = l.SubmitBatch(batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.waitIndexed(context.Background(), last); err != nil {
		b.Fatal(err)
	}
	settle(b, l)
	// The writer: batches of 100 on a deadline schedule, batch k due at
	// start + k*100/rate. A batch found late is submitted at once, so the
	// time a starved writer loses is caught up, not dropped (a Ticker
	// drops the ticks its reader misses).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		wops := make([]Op, 100)
		wrng := rand.New(rand.NewPCG(3, 4))
		for i := range wops {
			a := 2 + wrng.Uint64N(accounts-2)
			wops[i] = Transfer{From: a, To: benchHot, Amount: 1}
			if i%50 != 0 {
				wops[i] = Deposit{Account: a, Amount: 1}
			}
		}
		every := time.Duration(int64(time.Second) * int64(len(wops)) / int64(*benchHistoryRate))
		timer := time.NewTimer(every)
		defer timer.Stop()
		for next := time.Now(); ; next = next.Add(every) {
			if d := time.Until(next); d > 0 {
				timer.Reset(d)
				select {
				case <-stop:
					return
				case <-timer.C:
				}
			} else {
				select {
				case <-stop:
					return
				default:
				}
			}
			if _, _, err := l.SubmitBatch(wops); err != nil {
				return
			}
		}
	}()
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	x0 := l.indexes()
	rrng := rand.New(rand.NewPCG(5, 6))
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		err := read(ctx, l, rrng)
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	x1 := l.indexes()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(x1.Committed-x0.Committed)/b.Elapsed().Seconds(), "writes-tx/s")
}

// BenchmarkIndexCatchUp is Open's catch-up rate: -ledger.catchup-txs
// transactions (deposits and transfers over 1M accounts, one in 100 with a
// History account) written with the index off, then Open with it on
// replays them into it. ns/op and tx/s are per transaction caught up.
func BenchmarkIndexCatchUp(b *testing.B) {
	accounts := *benchIndexAccts
	dir := b.TempDir()
	cfg := Config{Dir: dir, MaxAccounts: accounts, WALRetention: -1, Index: true}
	l, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	createFlagged(b, l, accounts, func(id uint64) AccountFlags {
		if id%100 == 0 {
			return History
		}
		return 0
	})
	if _, err := l.Snapshot(context.Background()); err != nil {
		b.Fatal(err)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	off := cfg
	off.Index = false
	if l, err = Open(off); err != nil {
		b.Fatal(err)
	}
	ops := benchOps(1<<16, accounts)
	var last TxID
	for i := 0; i < *benchCatchUpTxs; i += 4096 {
		if _, last, err = l.SubmitBatch(ops[i&(len(ops)-1) : i&(len(ops)-1)+4096]); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Wait(context.Background(), last, Committed); err != nil {
		b.Fatal(err)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	if b.N > 1 {
		b.Skip("run with -benchtime 1x: one Open catches up")
	}
	b.ResetTimer()
	if l, err = Open(cfg); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	st := l.IndexStats()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	if st.CaughtUp < uint64(*benchCatchUpTxs) {
		b.Fatalf("caught up %d transactions", st.CaughtUp)
	}
	b.ReportMetric(float64(st.CaughtUp)/st.CatchUp.Seconds(), "tx/s")
	b.ReportMetric(float64(st.CaughtUp), "txs")
	b.ReportMetric(float64(st.CatchUp.Nanoseconds())/float64(st.CaughtUp), "ns/tx")
}

// BenchmarkIndexApply is the Snapshotter's extra work per transaction with
// the index on: history records (none here: no account keeps history) and
// a batch's blocks and postings, committed to pebble unsynced, for batches
// of 4,096 deposits and transfers over 100k accounts. Meant for callgrind
// (instructions per transaction: run with two -test.benchtime and
// subtract) as well as ns/op.
func BenchmarkIndexApply(b *testing.B) {
	const accounts = 100_000
	l, err := Open(Config{Dir: b.TempDir(), MaxAccounts: accounts})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	createFlagged(b, l, accounts, func(uint64) AccountFlags { return 0 })
	settle(b, l)
	ixdb, err := openIndexStore(&Config{FS: vfs.Default, Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer ixdb.Close()
	ix := newIndexWriter(ixdb, nil, l.accts, accounts)
	defer ix.b.Close()
	ix.from, ix.last = 1<<40, 1<<40-1 // ids far above the ledger's own
	ops := benchOps(snapshotterRun, accounts)
	recs := make([]txRecord, snapshotterRun)
	var pos []txPos
	var cells cellSource = liveCells(l.readable)
	next, ts := ix.last+1, time.Now().UnixNano()
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n += len(recs) {
		k := min(len(recs), b.N-n)
		for i := range recs[:k] {
			r := &recs[i]
			*r = txRecord{id: next, ts: ts, n: 2}
			next++
			ts += 100
			switch o := ops[i].(type) {
			case Deposit:
				s, _ := l.accts.slot(o.Account)
				r.kind = KindDeposit
				r.inline[0] = cellEntry{acct: 0, delta: int64(o.Amount), value: 1, cell: uint32(cell(0, DebitsPosted)), col: DebitsPosted}
				r.inline[1] = cellEntry{acct: o.Account, delta: int64(o.Amount), value: 1, cell: uint32(cell(s, CreditsPosted)), col: CreditsPosted}
			case Transfer:
				f, _ := l.accts.slot(o.From)
				t, _ := l.accts.slot(o.To)
				r.kind, r.ledger = KindTransfer, 1
				r.inline[0] = cellEntry{acct: o.From, delta: int64(o.Amount), value: 1, cell: uint32(cell(f, DebitsPosted)), col: DebitsPosted}
				r.inline[1] = cellEntry{acct: o.To, delta: int64(o.Amount), value: 1, cell: uint32(cell(t, CreditsPosted)), col: CreditsPosted}
			}
			if err := ix.history(recs[:k], i, cells); err != nil {
				b.Fatal(err)
			}
		}
		// Where the WAL stage's record would hold them (nothing reads it).
		rec := walRef{seq: 1, segFirst: 1, last: recs[k-1].id, base: recs[0].ts}
		pos = pos[:0]
		off := uint32(wal.HeaderRoom + batchHeaderLen)
		for i := range recs[:k] {
			n := uint32(recs[i].encodedLen())
			pos = append(pos, txPos{ref: ix.refFor(&rec), off: off, n: n})
			off += n
		}
		if err := ix.apply(recs[:k], pos); err != nil {
			b.Fatal(err)
		}
	}
}
