package ledger_test

import (
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
	if _, err := l.SubmitAndWait(ctx, ledger.Deposit{Account: 1, Amount: 500}, ledger.Committed); err != nil {
		log.Fatal(err)
	}
	r, err := l.SubmitAndWait(ctx, ledger.Transfer{From: 1, To: 2, Amount: 800}, ledger.Committed)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.ID, r.Fail)
	// Output: 2 insufficient_funds
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

	// Submit returns as soon as the transaction has an id.
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
	// 1 250 -250
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
		fmt.Printf("account %d: %+d -> %d\n", e.Account, e.Delta, e.Balance)
	}
	// Output:
	// account 1: -100 -> 0
	// account 2: +98 -> 98
	// account 9: +2 -> 2
}
