package server_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/client"
	"github.com/lanework/lanework/ledger/server"
)

// Serve a ledger on both listeners, ports chosen by the kernel; submit
// through the Go client over the binary protocol and read the result over
// HTTP. Shutdown answers what it read, then the caller closes the ledger.
func Example() {
	dir, err := os.MkdirTemp("", "server-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 1000})
	if err != nil {
		log.Fatal(err)
	}
	s, err := server.New(l, server.Config{Addr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Start(); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	c, err := client.Dial(ctx, s.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.SubmitAndWait(ctx, ledger.Deposit{Account: 1, Amount: 100}, ledger.Committed); err != nil {
		log.Fatal(err)
	}
	// Balance reads show what the Snapshotter has applied: wait for the
	// Snapshot level to read this write back.
	r, err := c.SubmitAndWait(ctx, ledger.Transfer{From: 1, To: 2, Amount: 30}, ledger.Snapshot)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("transfer:", r.ID, r.Fail)
	c.Close()

	resp, err := http.Get("http://" + s.HTTPAddr().String() + "/v1/accounts/2/balance")
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("GET balance: %d %s", resp.StatusCode, body)

	if err := s.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("closed:", l.Close())
	// Output:
	// transfer: 2 ok
	// GET balance: 200 {"account":2,"balance":30}
	// closed: <nil>
}
