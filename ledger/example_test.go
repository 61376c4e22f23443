package ledger_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"

	"github.com/lanework/lanework/ledger"
)

func Example() {
	dir, _ := os.MkdirTemp("", "ledger-example")
	defer os.RemoveAll(dir)

	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 1000})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	ctx := context.Background()
	// Accounts are created first; 1 may not go below zero.
	if _, _, err := l.SubmitBatch([]ledger.Op{
		ledger.CreateAccount{ID: 1, Ledger: 1, Flags: ledger.DebitsMustNotExceedCredits},
		ledger.CreateAccount{ID: 2, Ledger: 1},
	}); err != nil {
		log.Fatal(err)
	}
	if _, err := l.SubmitAndWait(ctx, ledger.Deposit{Account: 1, Amount: 500}, ledger.Committed); err != nil {
		log.Fatal(err)
	}
	r, err := l.SubmitAndWait(ctx, ledger.Transfer{From: 1, To: 2, Amount: 800}, ledger.Committed)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.ID, r.Fail)
	r, err = l.SubmitAndWait(ctx, ledger.Transfer{From: 1, To: 3, Amount: 100}, ledger.Committed)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.ID, r.Fail)
	// Output:
	// 4 exceeds_credits
	// 5 account_not_found
}

func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "ledger-example")
	defer os.RemoveAll(dir)

	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 1000})
	if err != nil {
		log.Fatal(err)
	}
	x, _ := l.Indexes()
	fmt.Printf("%+v\n", x)
	fmt.Println(l.Close())
	// Output:
	// {Sequenced:0 Computed:0 Committed:0 Snapshot:0}
	// <nil>
}

func ExampleLedger_Submit() {
	dir, _ := os.MkdirTemp("", "ledger-example")
	defer os.RemoveAll(dir)
	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 1000})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	// Submit returns as soon as the transaction has an id; the
	// Transactor runs ops in id order, so the account exists in time.
	if _, err := l.Submit(ledger.CreateAccount{ID: 7, Ledger: 1}); err != nil {
		log.Fatal(err)
	}
	id, err := l.Submit(ledger.Deposit{Account: 7, Amount: 250})
	if err != nil {
		log.Fatal(err)
	}
	// Wait until the readable balances include it.
	if err := l.Wait(context.Background(), id, ledger.Snapshot); err != nil {
		log.Fatal(err)
	}
	bal, _ := l.Balance(7)
	sys, _ := l.Balance(ledger.SystemAccount)
	fmt.Println(id, bal, sys)

	_, err = l.Submit(ledger.Transfer{From: 7, To: 7, Amount: 1})
	fmt.Println(err)
	// Output:
	// 2 250 -250
	// op 0: ledger: source and destination are the same account
}

func ExampleLedger_SubmitAndWait() {
	dir, _ := os.MkdirTemp("", "ledger-example")
	defer os.RemoveAll(dir)
	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 1000})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	ctx := context.Background()
	for _, id := range []uint64{1, 2, 9} {
		l.Submit(ledger.CreateAccount{ID: id, Ledger: 1})
	}
	l.SubmitAndWait(ctx, ledger.Deposit{Account: 1, Amount: 100}, ledger.Computed)
	// A three-leg payment with a fee to account 9; it must net to zero.
	r, err := l.SubmitAndWait(ctx, ledger.Composite{
		Legs:  []ledger.Leg{{Account: 1, Delta: -100}, {Account: 2, Delta: 98}, {Account: 9, Delta: 2}},
		Flags: ledger.NoNegative,
	}, ledger.Committed)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range r.Entries {
		fmt.Printf("account %d: %v %+d -> %d\n", e.Account, e.Column, e.Delta, e.Value)
	}
	// Output:
	// account 1: debits_posted +100 -> 100
	// account 2: credits_posted +98 -> 98
	// account 9: credits_posted +2 -> 2
}

// A checkpoint copies a running ledger's durable state into another
// directory (ledgercluster sends one to a replica that fell behind).
func ExampleLedger_WriteCheckpoint() {
	root, _ := os.MkdirTemp("", "ledger-checkpoint")
	defer os.RemoveAll(root)
	l, err := ledger.Open(ledger.Config{Dir: root + "/a", MaxAccounts: 100})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	if _, err := l.SubmitAndWait(ctx, ledger.CreateAccount{ID: 1, Ledger: 1}, ledger.Committed); err != nil {
		log.Fatal(err)
	}
	if _, err := l.SubmitAndWait(ctx, ledger.Deposit{Account: 1, Amount: 42}, ledger.Committed); err != nil {
		log.Fatal(err)
	}
	var ck bytes.Buffer
	if _, err := l.WriteCheckpoint(ctx, &ck); err != nil {
		log.Fatal(err)
	}
	last, err := ledger.InstallCheckpoint(ledger.Config{Dir: root + "/b", MaxAccounts: 100}, &ck)
	if err != nil {
		log.Fatal(err)
	}
	c, err := ledger.Open(ledger.Config{Dir: root + "/b", MaxAccounts: 100})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	b, _ := c.Balance(1)
	fmt.Println(last, b)
	// Output: 2 42
}

// A card authorisation: a hold (Pending), then a capture of part of it
// (PostPendingTransfer names the hold's TxID; the rest is released).
func ExampleTransfer_pending() {
	dir, _ := os.MkdirTemp("", "ledger-example")
	defer os.RemoveAll(dir)

	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 1000})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	res, err := l.SubmitBatchAndWait(ctx, []ledger.Op{
		ledger.CreateAccount{ID: 1, Ledger: 840, Flags: ledger.DebitsMustNotExceedCredits}, // the card holder
		ledger.CreateAccount{ID: 2, Ledger: 840},                                           // the merchant
		ledger.Deposit{Account: 1, Amount: 100},
		ledger.Transfer{From: 1, To: 2, Amount: 60, Flags: ledger.Pending, Timeout: 7 * 24 * 3600},
	}, ledger.Committed)
	if err != nil {
		log.Fatal(err)
	}
	hold := res[3].ID
	r, err := l.SubmitAndWait(ctx, ledger.Transfer{From: 1, To: 2, Amount: 41}, ledger.Committed)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("spend 41 more:", r.Fail) // 60 held + 41 > 100
	r, err = l.SubmitAndWait(ctx, ledger.Transfer{Flags: ledger.PostPendingTransfer, PendingID: hold, Amount: 45}, ledger.Snapshot)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("capture 45:", r.Fail)
	a, err := l.Lookup(1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.DebitsPosted, a.DebitsPending, a.Balance())
	r, err = l.SubmitAndWait(ctx, ledger.Transfer{Flags: ledger.VoidPendingTransfer, PendingID: hold}, ledger.Committed)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("void it:", r.Fail)
	// Output:
	// spend 41 more: exceeds_credits
	// capture 45: ok
	// 45 0 55
	// void it: pending_transfer_already_posted
}
