// Command crashload drives load against a ledger until it is killed. It is
// built and run by the ledger's kill -9 test, never installed.
//
// It opens the ledger in -dir, prints "ready", then runs -workers goroutines
// submitting deposits, withdrawals, transfers, composites and resubmissions
// of their own acknowledged UserRefs, each with SubmitAndWait(Committed).
// Every acknowledged result is written to stdout as one JSON line (a
// ledger.Result) in a single write, so whatever the parent has read when it
// sends SIGKILL was acknowledged. One more goroutine submits unacknowledged
// batches, so the kill also lands on work in flight.
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

// Config the parent reopens with: keep in sync with kill9_test.go.
const (
	maxAccounts   = 64
	snapshotEvery = 2000
	// segmentSize is small so that kills land in segment rollovers too.
	segmentSize = 1 << 20
)

func main() {
	dir := flag.String("dir", "", "ledger directory")
	seed := flag.Uint64("seed", 1, "random seed")
	run := flag.Uint64("run", 1, "run number: the high bits of every UserRef")
	workers := flag.Int("workers", 4, "acknowledging submitters")
	flag.Parse()
	l, err := ledger.Open(ledger.Config{Dir: *dir, MaxAccounts: maxAccounts, SnapshotEvery: snapshotEvery, WALRetention: -1, WALSegmentSize: segmentSize})
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
		go work(l, rand.New(rand.NewPCG(*seed, uint64(w))), *run<<40|uint64(w)<<32, ack)
	}
	go func() { // unacknowledged load
		ops := make([]ledger.Op, 8)
		for i := 0; ; i++ {
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
		}
	}()
	select {} // until killed
}

func work(l *ledger.Ledger, rng *rand.Rand, refBase uint64, ack func(ledger.Result)) {
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
