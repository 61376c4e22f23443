package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/inspect"
)

func ExampleDump() {
	dir, _ := os.MkdirTemp("", "ledger-example")
	defer os.RemoveAll(dir)

	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 1000})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	l.SubmitAndWait(ctx, ledger.CreateAccount{ID: 1, Ledger: 1, Flags: ledger.DebitsMustNotExceedCredits}, ledger.Committed)
	l.SubmitAndWait(ctx, ledger.Deposit{Account: 1, Amount: 500, UserRef: 7}, ledger.Committed)
	l.SubmitAndWait(ctx, ledger.Transfer{From: 1, To: 2, Amount: 800}, ledger.Committed)
	l.Close() // the offline tools read a closed directory

	var out bytes.Buffer
	if err := inspect.Dump(dir, 1, 0, &out); err != nil {
		log.Fatal(err)
	}
	for dec := json.NewDecoder(&out); dec.More(); {
		var tx inspect.DumpTx
		if err := dec.Decode(&tx); err != nil {
			log.Fatal(err)
		}
		fmt.Println(tx.ID, tx.Kind, tx.Fail, tx.UserRef, tx.Entries)
	}
	rep, err := inspect.Verify(dir)
	fmt.Println(rep.Transactions, rep.FromZero, err)
	// Output:
	// 1 create_account ok 0 []
	// 2 deposit ok 7 [{0 debits_posted 500 500} {1 credits_posted 500 500}]
	// 3 transfer account_not_found 0 []
	// 3 true <nil>
}
