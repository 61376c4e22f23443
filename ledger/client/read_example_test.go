package client_test

import (
	"context"
	"fmt"
	"log"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/client"
)

// A History account's transfers over the wire, read after one's own write
// with WaitFor.
func ExampleClient_AccountTransfers() {
	addr, stop := serve()
	defer stop()
	ctx := context.Background()
	c, err := client.Dial(ctx, addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Sequenced only: WaitFor makes the read wait for the write.
	_, last, err := c.SubmitBatch(ctx, []ledger.Op{
		ledger.CreateAccount{ID: 1, Ledger: 1, Flags: ledger.History},
		ledger.Deposit{Account: 1, Amount: 40},
		ledger.Withdrawal{Account: 1, Amount: 15},
		ledger.Deposit{Account: 1, Amount: 2},
	}, ledger.Sequenced)
	if err != nil {
		log.Fatal(err)
	}
	p, err := c.AccountTransfers(ctx, 1, ledger.AccountFilter{Credits: true, Debits: true, Limit: 10, Reverse: true, WaitFor: last})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range p.Transfers {
		fmt.Println(t.Kind, int64(t.Balance.CreditsPosted)-int64(t.Balance.DebitsPosted))
	}
	fmt.Println(p.AsOf >= last)
	// Output:
	// deposit 27
	// withdrawal 25
	// deposit 40
	// true
}
