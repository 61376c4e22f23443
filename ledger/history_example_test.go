package ledger_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/lanework/lanework/ledger"
)

// An account created with the History flag keeps its transfers, each with
// its columns after it; pages continue with their cursor.
func ExampleLedger_AccountTransfers() {
	dir, _ := os.MkdirTemp("", "ledger-history")
	defer os.RemoveAll(dir)
	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 100, Index: true})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	ops := []ledger.Op{
		ledger.CreateAccount{ID: 1, Ledger: 1, Flags: ledger.History},
		ledger.CreateAccount{ID: 2, Ledger: 1},
		ledger.Deposit{Account: 1, Amount: 100},
		ledger.Transfer{From: 1, To: 2, Amount: 30, Code: 7},
		ledger.Deposit{Account: 1, Amount: 5},
	}
	res, err := l.SubmitBatchAndWait(ctx, ops, ledger.Committed)
	if err != nil {
		log.Fatal(err)
	}
	f := ledger.AccountFilter{Debits: true, Credits: true, Limit: 2, WaitFor: res[len(res)-1].ID}
	for {
		p, err := l.AccountTransfers(ctx, 1, f)
		if err != nil {
			log.Fatal(err)
		}
		for _, t := range p.Transfers {
			fmt.Printf("tx %d %s: debits %d credits %d\n", t.ID, t.Kind, t.Balance.DebitsPosted, t.Balance.CreditsPosted)
		}
		if p.Next == "" {
			break
		}
		f.Cursor = p.Next
	}
	b, _, err := l.BalanceAt(ctx, 1, res[3].ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after tx", res[3].ID, "balance", int64(b.CreditsPosted)-int64(b.DebitsPosted))
	q, err := l.QueryTransfers(ctx, ledger.TransferFilter{Code: 7, Limit: 10})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("code 7:", len(q.Transfers), "transfer, tx", q.Transfers[0].ID)
	_, err = l.AccountTransfers(ctx, 2, ledger.AccountFilter{Debits: true, Limit: 10})
	fmt.Println(err)
	// Output:
	// tx 3 deposit: debits 0 credits 100
	// tx 4 transfer: debits 30 credits 100
	// tx 5 deposit: debits 30 credits 105
	// after tx 4 balance 70
	// code 7: 1 transfer, tx 4
	// account 2: ledger: account keeps no history (created without the history flag)
}
