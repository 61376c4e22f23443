package ledger

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/lanework/lanework/pressure"
)

func benchOps(n int, accounts uint64) []Op {
	rng := rand.New(rand.NewPCG(1, 1))
	ops := make([]Op, n)
	for i := range ops {
		a := 1 + rng.Uint64N(accounts-1)
		if i%2 == 0 {
			ops[i] = Deposit{Account: a, Amount: 1 + rng.Uint64N(10_000)}
		} else {
			b := a%(accounts-1) + 1
			ops[i] = Transfer{From: a, To: b, Amount: 1 + rng.Uint64N(100)}
		}
	}
	return ops
}

// BenchmarkSubmit is sustained durable throughput from one goroutine: each
// op is a Submit (deposits and transfers between the 1M accounts created
// before the timer starts), and the timer stops only once the last is
// Committed, so ns/op is the pipeline's cost per transaction (WAL synced,
// snapshots on).
func BenchmarkSubmit(b *testing.B) {
	l, err := Open(Config{Dir: b.TempDir(), MaxAccounts: 1_000_000})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	createAccounts(b, l, 1_000_000)
	settle(b, l)
	ops := benchOps(1<<16, 1_000_000)
	b.ReportAllocs()
	submitCommitted(b, l, ops)
}

// BenchmarkSubmitTransfers is BenchmarkSubmit with simple transfers only,
// between 1M accounts created without limits (so every one applies).
func BenchmarkSubmitTransfers(b *testing.B) {
	l, err := Open(Config{Dir: b.TempDir(), MaxAccounts: 1_000_000})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	batch := make([]Op, 0, 4096)
	for a := uint64(1); a < 1_000_000; a++ {
		batch = append(batch, CreateAccount{ID: a, Ledger: 1})
		if len(batch) == cap(batch) || a == 1_000_000-1 {
			if _, _, err := l.SubmitBatch(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	settle(b, l)
	rng := rand.New(rand.NewPCG(1, 1))
	ops := make([]Op, 1<<16)
	for i := range ops {
		from := 1 + rng.Uint64N(1_000_000-1)
		ops[i] = Transfer{From: from, To: from%(1_000_000-1) + 1, Amount: 1 + rng.Uint64N(100)}
	}
	b.ReportAllocs()
	submitCommitted(b, l, ops)
	if st := l.Stats(); st.Outcomes[KindTransfer][OK] < uint64(b.N) {
		b.Fatalf("%d of %d transfers applied", st.Outcomes[KindTransfer][OK], b.N)
	}
}

// BenchmarkSubmitPendingPost is BenchmarkSubmitTransfers with each transfer
// two-phase: a Pending transfer, then a post of all of it naming the id
// Submit returned; one Submit each, so ns/op and tx/s are per op (two per
// pair), and pairs/s is the transfers completed.
func BenchmarkSubmitPendingPost(b *testing.B) {
	const accounts = 1_000_000
	l, err := Open(Config{Dir: b.TempDir(), MaxAccounts: accounts})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	createPlainAccounts(b, l, accounts)
	settle(b, l)
	rng := rand.New(rand.NewPCG(1, 1))
	ops := make([]Transfer, 1<<16)
	for i := range ops {
		from := 1 + rng.Uint64N(accounts-1)
		ops[i] = Transfer{From: from, To: from%(accounts-1) + 1, Amount: 1 + rng.Uint64N(100), Flags: Pending}
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuNanos()
	var last TxID
	for i := 0; i < b.N; i += 2 {
		if last, err = l.Submit(ops[(i/2)&(len(ops)-1)]); err != nil {
			b.Fatal(err)
		}
		if last, err = l.Submit(Transfer{Flags: PostPendingTransfer, PendingID: last}); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Wait(context.Background(), last, Committed); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tx/s")
	b.ReportMetric(float64(b.N/2)/b.Elapsed().Seconds(), "pairs/s")
	b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N), "cpu-ns/op")
	if st := l.Stats(); st.Outcomes[KindTransfer][OK] < uint64(b.N) {
		b.Fatalf("%d of %d ops applied", st.Outcomes[KindTransfer][OK], b.N)
	}
}

// createPlainAccounts creates accounts 1 .. n-1 in ledger 1, without
// limits.
func createPlainAccounts(b *testing.B, l *Ledger, n uint64) {
	b.Helper()
	batch := make([]Op, 0, 4096)
	for a := uint64(1); a < n; a++ {
		batch = append(batch, CreateAccount{ID: a, Ledger: 1})
		if len(batch) == cap(batch) || a == n-1 {
			if _, _, err := l.SubmitBatch(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// BenchmarkSubmitChains is BenchmarkSubmitTransfers with the transfers in
// linked chains of 4, one SubmitBatch each; ns/op and tx/s are per
// transfer.
func BenchmarkSubmitChains(b *testing.B) {
	const accounts = 1_000_000
	l, err := Open(Config{Dir: b.TempDir(), MaxAccounts: accounts})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	batch := make([]Op, 0, 4096)
	for a := uint64(1); a < accounts; a++ {
		batch = append(batch, CreateAccount{ID: a, Ledger: 1})
		if len(batch) == cap(batch) || a == accounts-1 {
			if _, _, err := l.SubmitBatch(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	settle(b, l)
	rng := rand.New(rand.NewPCG(1, 1))
	chains := make([][]Op, 1<<14)
	for i := range chains {
		c := make([]Op, 4)
		for j := range c {
			from := 1 + rng.Uint64N(accounts-1)
			c[j] = Transfer{From: from, To: from%(accounts-1) + 1, Amount: 1 + rng.Uint64N(100), Linked: j < 3}
		}
		chains[i] = c
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuNanos()
	var last TxID
	for i := 0; i < b.N; i += 4 {
		if _, last, err = l.SubmitBatch(chains[(i/4)&(len(chains)-1)]); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Wait(context.Background(), last, Committed); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tx/s")
	b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N), "cpu-ns/op")
	if st := l.Stats(); st.Outcomes[KindTransfer][OK] < uint64(b.N) {
		b.Fatalf("%d of %d transfers applied", st.Outcomes[KindTransfer][OK], b.N)
	}
}

// settle makes the accounts' creation durable in a snapshot and flushes
// pebble, so that the timed part does not pay for writing the setup.
func settle(b *testing.B, l *Ledger) {
	b.Helper()
	if _, err := l.Snapshot(context.Background()); err != nil {
		b.Fatal(err)
	}
	if err := l.db.Flush(); err != nil {
		b.Fatal(err)
	}
}

// submitCommitted times b.N submits of ops, round robin, until the last is
// Committed, and reports the durable rate as tx/s.
func submitCommitted(b *testing.B, l *Ledger, ops []Op) {
	b.Helper()
	b.ResetTimer()
	cpu := cpuNanos()
	var last TxID
	var err error
	for i := 0; i < b.N; i++ {
		if last, err = l.Submit(ops[i&(len(ops)-1)]); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Wait(context.Background(), last, Committed); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tx/s")
	b.ReportMetric(float64(cpuNanos()-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkSubmitParallel is the same with GOMAXPROCS submitting goroutines
// (run with -cpu 4 for more submitters than cores).
func BenchmarkSubmitParallel(b *testing.B) {
	l, err := Open(Config{Dir: b.TempDir(), MaxAccounts: 1_000_000})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	createAccounts(b, l, 1_000_000)
	ops := benchOps(1<<16, 1_000_000)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(len(ops))
		for pb.Next() {
			if _, err := l.Submit(ops[i&(len(ops)-1)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	x, _ := l.Indexes()
	if err := l.Wait(context.Background(), x.Sequenced, Committed); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tx/s")
}

// BenchmarkRecovery times Open replaying a WAL of 1M account creations and
// 5M transfers (no snapshot); tx/s is the replay rate, the whole Open
// counted.
func BenchmarkRecovery(b *testing.B) {
	const n = 5_000_000
	cfg := Config{Dir: b.TempDir(), MaxAccounts: 1_000_000, SnapshotEvery: -1}
	l, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	createAccounts(b, l, 1_000_000)
	ops := benchOps(1<<12, 1_000_000)
	for i := 0; i < n; i += len(ops) {
		if _, _, err := l.SubmitBatch(ops); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var el time.Duration
	var replayed uint64
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		l, err := Open(cfg)
		el += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if got := l.recovered.replayed; got < n+1_000_000 {
			b.Fatalf("replayed %d", got)
		}
		replayed += l.recovered.replayed
		b.StopTimer()
		l.Close()
		b.StartTimer()
	}
	// Every transaction the Open replayed, the creations too; transfers/s
	// counts the 5M transfers alone (what this reported before).
	b.ReportMetric(float64(replayed)/el.Seconds(), "tx/s")
	b.ReportMetric(float64(n)*float64(b.N)/el.Seconds(), "transfers/s")
}

// BenchmarkClosedLoopCommit submits one transaction at a time and waits for
// it to be Committed: the pipeline's unloaded submit -> Committed latency
// (one group commit of one transaction), per wait strategy.
func BenchmarkClosedLoopCommit(b *testing.B) {
	for _, ws := range []pressure.WaitStrategy{pressure.Balanced, pressure.LowCPU, pressure.LowLatency} {
		b.Run(ws.String(), func(b *testing.B) {
			l, err := Open(Config{Dir: b.TempDir(), MaxAccounts: 1000, WaitStrategy: ws})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			createAccounts(b, l, 2)
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				id, err := l.Submit(Deposit{Account: 1, Amount: 1})
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Wait(ctx, id, Committed); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkExecute is the Transactor's cost per transaction alone: random
// deposits and transfers over 1M accounts, touched ahead in groups as the
// Transactor does, into a ring of 65,536 records (the WAL ring's size).
func BenchmarkExecute(b *testing.B) {
	benchExecute(b, newDedup(DefaultDedupWindow), false)
}

// BenchmarkExecutePendingPost is BenchmarkExecute's Transactor on pending +
// post pairs between the same accounts (without limits): a Pending
// transfer, then a post of all of it; ns/op is per op, two per pair.
// Resolved pending transfers are remembered for 65,536 transactions.
func BenchmarkExecutePendingPost(b *testing.B) {
	const accounts, lag = 1_000_000, 1 << 16
	accts := newAccountTable(accounts)
	for a := uint64(1); a < accounts; a++ {
		accts.insert(acctMeta{id: a, ledger: 1})
	}
	x := &executor{work: newWork(accounts, 0, nil), accts: accts, dedup: newDedup(DefaultDedupWindow),
		maxEntries: DefaultMaxEntries, book: newPendingBook(fateRetention{txs: lag})}
	rng := rand.New(rand.NewPCG(1, 1))
	reqs := make([]request, 1<<20)
	for i := range reqs {
		from := 1 + rng.Uint64N(accounts-1)
		op := Transfer{From: from, To: from%(accounts-1) + 1, Amount: 1 + rng.Uint64N(100), Flags: Pending}
		if i%2 == 1 {
			op = Transfer{Flags: PostPendingTransfer, PendingID: 1}
		}
		if err := prepare(op, &reqs[i]); err != nil {
			b.Fatal(err)
		}
	}
	recs := make([]txRecord, lag)
	req := make([]request, touchAhead)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := uint64(i + 1)
		rec := &recs[id%lag]
		k := i % touchAhead
		if k == 0 {
			j := i & (len(reqs) - 1)
			copy(req, reqs[j:min(j+touchAhead, len(reqs))])
			x.dedup.startRun(id, int64(id))
			x.beginRun(id, int64(id))
			x.touch(req)
		}
		r := &req[k]
		if r.tflags()&PostPendingTransfer != 0 {
			r.aux = id - 1 // the pending transfer just before
		}
		x.execute(r, id, int64(id), rec)
		if rec.fail != OK {
			b.Fatalf("tx %d: %v", id, rec.fail)
		}
	}
}

// BenchmarkExecuteRefs is BenchmarkExecute with a fresh UserRef on every
// transaction, deduplicated by the window (DedupRetention < 0) or by the
// durable index's table (the default): the index's cost to the Transactor,
// the stage that bounds throughput.
func BenchmarkExecuteRefs(b *testing.B) {
	b.Run("window", func(b *testing.B) { benchExecute(b, newDedup(DefaultDedupWindow), true) })
	b.Run("index", func(b *testing.B) {
		benchExecute(b, &dedup{idx: &refIndex{keep: refRetention{age: int64(DefaultDedupRetention)}, table: newRefTable(0)}}, true)
	})
}

func benchExecute(b *testing.B, d *dedup, refs bool) {
	const accounts, ring = 1_000_000, 1 << 16
	accts := newAccountTable(accounts)
	for a := uint64(1); a < accounts; a++ {
		accts.insert(acctMeta{id: a, ledger: 1, flags: DebitsMustNotExceedCredits}) // as every account was before: no debit below zero
	}
	x := &executor{work: newWork(accounts, 0, nil), accts: accts, dedup: d, maxEntries: DefaultMaxEntries}
	ops := benchOps(1<<20, accounts)
	reqs := make([]request, len(ops))
	for i, op := range ops {
		if err := prepare(op, &reqs[i]); err != nil {
			b.Fatal(err)
		}
	}
	recs := make([]txRecord, ring)
	req := make([]request, touchAhead)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := uint64(i + 1)
		k := i % touchAhead
		if k == 0 {
			j := i & (len(reqs) - 1)
			copy(req, reqs[j:min(j+touchAhead, len(reqs))])
			if refs {
				for n := range req {
					req[n].userRef = id + uint64(n)
				}
			}
			x.dedup.startRun(id, int64(id))
			x.touch(req)
		}
		rec := &recs[id%ring]
		x.execute(&req[k], id, 0, rec)
		if rec.fail == Duplicate {
			b.Fatal("a fresh ref reported as a duplicate")
		}
	}
}

// BenchmarkDedupIndex is BenchmarkSubmit with a fresh UserRef on every
// transaction (the index's worst case: every ref is written to pebble, and
// every lookup misses the window), with the durable index (retention 24 h)
// and without it (window only). The ratio of the two is the index's cost.
func BenchmarkDedupIndex(b *testing.B) {
	for _, c := range []struct {
		name      string
		retention time.Duration
	}{{"window", -1}, {"index", DefaultDedupRetention}} {
		b.Run(c.name, func(b *testing.B) {
			l, err := Open(Config{Dir: b.TempDir(), MaxAccounts: 1_000_000, DedupRetention: c.retention})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			createAccounts(b, l, 1_000_000)
			ops := benchOps(1<<16, 1_000_000)
			b.ReportAllocs()
			b.ResetTimer()
			var last TxID
			for i := 0; i < b.N; i++ {
				op := ops[i&(len(ops)-1)]
				ref := uint64(i) + 1
				switch o := op.(type) { // a fresh ref (boxing o allocates, in both variants)
				case Deposit:
					o.UserRef = ref
					op = o
				case Transfer:
					o.UserRef = ref
					op = o
				}
				if last, err = l.Submit(op); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Wait(context.Background(), last, Committed); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tx/s")
			if st := l.Stats(); st.Fails(Duplicate) != 0 {
				b.Fatal("fresh refs reported as duplicates")
			}
		})
	}
}
