// Command crashload drives load against a ledger until it is killed. It is
// built and run by the ledger's kill -9 test, never installed.
//
// It opens the ledger in -dir with the configuration its flags give (the
// test passes its own, so both open the directory alike), prints "ready",
// then runs -workers goroutines submitting deposits, withdrawals,
// transfers, composites and resubmissions of their own acknowledged
// UserRefs, each with SubmitAndWait(Committed).
// Every acknowledged result is written to stdout as one JSON line (a
// ledger.Result) in a single write, so whatever the parent has read when it
// sends SIGKILL was acknowledged. One more goroutine submits unacknowledged
// // batches of -unacked deposits, up to -unacked-max in all (so that a run
// adds a bounded number of transactions), so the kill also lands on work in
// flight, and the WAL fills segments fast enough that kills land in
// rollovers and in retention's removal of old segments. It reports its
// progress as lines "unacked N" (N deposits committed), so that the test can
// place kills by progress as well as by time.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"

	"github.com/lanework/lanework/ledger"
)

func main() {
	dir := flag.String("dir", "", "ledger directory")
	seed := flag.Uint64("seed", 1, "random seed")
	run := flag.Uint64("run", 1, "run number: the high bits of every UserRef")
	workers := flag.Int("workers", 4, "acknowledging submitters")
	unacked := flag.Int("unacked", 256, "deposits per unacknowledged batch")
	unackedMax := flag.Int("unacked-max", 8192, "unacknowledged deposits per run, at most")
	var cfg ledger.Config
	flag.Uint64Var(&cfg.MaxAccounts, "accounts", 64, "Config.MaxAccounts")
	flag.Int64Var(&cfg.SnapshotEvery, "snapshot-every", 0, "Config.SnapshotEvery")
	flag.Int64Var(&cfg.WALRetention, "wal-retention", 0, "Config.WALRetention")
	flag.Int64Var(&cfg.WALSegmentSize, "segment-size", 0, "Config.WALSegmentSize")
	flag.Uint64Var(&cfg.DedupWindow, "dedup-window", 0, "Config.DedupWindow")
	flag.Uint64Var(&cfg.DedupRetentionTxs, "dedup-retention-txs", 0, "Config.DedupRetentionTxs")
	flag.BoolVar(&cfg.Index, "index", false, "Config.Index")
	flag.Parse()
	cfg.Dir = *dir
	maxAccounts := cfg.MaxAccounts
	l, err := ledger.Open(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashload:", err)
		os.Exit(2)
	}
	// The accounts, before the first acknowledgement; on a restart each
	// creation fails with exists, harmlessly.
	create := make([]ledger.Op, maxAccounts-1)
	for i := range create {
		create[i] = ledger.CreateAccount{ID: uint64(i) + 1, Ledger: 1, Flags: ledger.DebitsMustNotExceedCredits}
	}
	if _, last, err := l.SubmitBatch(create); err != nil || l.Wait(context.Background(), last, ledger.Committed) != nil {
		fmt.Fprintln(os.Stderr, "crashload: create accounts:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	ack := func(r ledger.Result) {
		line, err := json.Marshal(r)
		if err != nil {
			panic(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if _, err := os.Stdout.Write(append(line, '\n')); err != nil {
			os.Exit(3)
		}
	}
	os.Stdout.WriteString("ready\n")
	for w := range *workers {
		go work(l, maxAccounts, rand.New(rand.NewPCG(*seed, uint64(w))), *run<<40|uint64(w)<<32, ack)
	}
	go func() { // unacknowledged load
		ops := make([]ledger.Op, *unacked)
		for i := 0; i < *unackedMax; i += len(ops) {
			for j := range ops {
				ops[j] = ledger.Deposit{Account: 1 + uint64(i+j)%(maxAccounts-1), Amount: 1}
			}
			_, last, err := l.SubmitBatch(ops)
			if err == nil {
				err = l.Wait(context.Background(), last, ledger.Committed) // in flight, but no flood
			}
			if err != nil {
				return
			}
			mu.Lock()
			fmt.Fprintf(os.Stdout, "unacked %d\n", i+len(ops))
			mu.Unlock()
		}
	}()
	select {} // until killed
}

func work(l *ledger.Ledger, maxAccounts uint64, rng *rand.Rand, refBase uint64, ack func(ledger.Result)) {
	acct := func() uint64 { return 1 + rng.Uint64N(maxAccounts-1) }
	var refs []uint64 // acknowledged original refs, for resubmission
	for n := uint64(1); ; n++ {
		ref := refBase | n
		var op ledger.Op
		switch p := rng.IntN(100); {
		case p < 35:
			op = ledger.Deposit{Account: acct(), Amount: 1 + rng.Uint64N(1000), UserRef: ref}
		case p < 55:
			from := acct()
			op = ledger.Transfer{From: from, To: 1 + (from+rng.Uint64N(maxAccounts-2))%(maxAccounts-1), Amount: 1 + rng.Uint64N(500), UserRef: ref}
		case p < 65:
			op = ledger.Withdrawal{Account: acct(), Amount: 1 + rng.Uint64N(300), UserRef: ref}
		case p < 85:
			d := int64(2 + rng.IntN(200)) // every leg non-zero
			op = ledger.Composite{Legs: []ledger.Leg{{Account: acct(), Delta: -d}, {Account: acct(), Delta: d / 2}, {Account: acct(), Delta: d - d/2}}, Flags: ledger.NoNegative, UserRef: ref}
		default:
			if len(refs) == 0 {
				continue
			}
			op = ledger.Deposit{Account: acct(), Amount: 1, UserRef: refs[rng.IntN(len(refs))]}
		}
		r, err := l.SubmitAndWait(context.Background(), op, ledger.Committed)
		if err != nil {
			fmt.Fprintln(os.Stderr, "crashload:", err)
			os.Exit(4)
		}
		ack(r)
		if r.Fail != ledger.Duplicate && r.UserRef != 0 {
			refs = append(refs, r.UserRef)
		}
	}
}
