package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/client"
	"github.com/lanework/lanework/ledger/server"
)

// serve starts a ledger server on a free loopback port, for the example.
func serve() (addr string, stop func()) {
	dir, err := os.MkdirTemp("", "ledger-example-")
	if err != nil {
		log.Fatal(err)
	}
	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 1000, Index: true})
	if err != nil {
		log.Fatal(err)
	}
	s, err := server.New(l, server.Config{Addr: "127.0.0.1:0", HTTPAddr: "off", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Start(); err != nil {
		log.Fatal(err)
	}
	return s.Addr().String(), func() {
		_ = s.Shutdown(context.Background())
		_ = l.Close()
		_ = os.RemoveAll(dir)
	}
}

func ExampleDial() {
	addr, stop := serve()
	defer stop()

	ctx := context.Background()
	c, err := client.Dial(ctx, addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// Accounts are created first: 1 may not go below zero.
	first, last, err := c.SubmitBatch(ctx, []ledger.Op{
		ledger.CreateAccount{ID: 1, Ledger: 1, Flags: ledger.DebitsMustNotExceedCredits},
		ledger.CreateAccount{ID: 2, Ledger: 1},
	}, ledger.Committed)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("accounts created by:", first, last)

	// Fire and forget: the id is known as soon as the ledger sequenced it.
	id, err := c.Submit(ctx, ledger.Deposit{Account: 1, Amount: 500, UserRef: 1001})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("deposit id:", id)

	// Submit and wait until the transfer is durable.
	res, err := c.SubmitAndWait(ctx, ledger.Transfer{From: 1, To: 2, Amount: 200, UserRef: 1002}, ledger.Committed)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("transfer:", res.ID, res.Fail)

	// Retrying with the same UserRef cannot execute twice.
	res, err = c.SubmitAndWait(ctx, ledger.Transfer{From: 1, To: 2, Amount: 200, UserRef: 1002}, ledger.Committed)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("retry:", res.Fail, "of", res.DupOf)

	// Balances reflect every transaction up to the Snapshot index.
	if err := c.Wait(ctx, res.ID, ledger.Snapshot); err != nil {
		log.Fatal(err)
	}
	b, err := c.Balance(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("balance of 2:", b)
	a, err := c.Lookup(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("account 1: debits", a.DebitsPosted, "credits", a.CreditsPosted)
	_, err = c.Lookup(ctx, 3)
	fmt.Println(errors.Is(err, ledger.ErrAccountNotFound))

	// Errors mirror the ledger's.
	_, err = c.Submit(ctx, ledger.Transfer{From: 1, To: 1, Amount: 1})
	fmt.Println(errors.Is(err, ledger.ErrSameAccount))
	// Output:
	// accounts created by: 1 2
	// deposit id: 3
	// transfer: 4 ok
	// retry: duplicate of 4
	// balance of 2: 200
	// account 1: debits 200 credits 500
	// true
	// true
}
