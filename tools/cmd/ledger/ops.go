package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/client"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

// dial connects to --addr and returns a context bounded by --timeout.
func dial(c *cli.Context) (*client.Client, context.Context, context.CancelFunc, error) {
	opts, err := clientOptions(c)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	// Several addresses: the replicas of a cluster, whose leader the
	// client follows (a submit is retried only with --ref).
	addrs := strings.Split(c.String("addr"), ",")
	if len(addrs) > 1 {
		opts = append(opts, client.WithCluster(addrs...))
	}
	cl, err := client.Dial(ctx, addrs[0], append(opts, client.WithConns(1))...)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return cl, ctx, func() { cl.Close(); cancel() }, nil
}

func opFlags() []cli.Flag {
	return append(clientFlags(),
		&cli.Uint64Flag{Name: "ref", EnvVars: []string{"LEDGER_REF"}, Usage: "idempotency key (UserRef): a retry with the same key cannot execute twice"},
		&cli.StringFlag{Name: "wait", Value: "committed", EnvVars: []string{"LEDGER_WAIT"},
			Usage: "answer once the transaction is computed, committed (durable) or snapshot (visible in balances)"},
		jsonFlag(),
	)
}

func parseWait(s string) (ledger.Level, error) {
	switch strings.ToLower(s) {
	case "computed":
		return ledger.Computed, nil
	case "committed":
		return ledger.Committed, nil
	case "snapshot":
		return ledger.Snapshot, nil
	}
	return 0, exitcode.Usage("--wait %q: want computed, committed or snapshot", s)
}

func depositCommand() *cli.Command {
	return &cli.Command{
		Name: "deposit", Usage: "move AMOUNT from the system account into ACCOUNT", ArgsUsage: "ACCOUNT AMOUNT",
		Flags: opFlags(),
		Action: func(c *cli.Context) error {
			a, err := args(c, "ACCOUNT", "AMOUNT")
			if err != nil {
				return err
			}
			return submit(c, ledger.Deposit{Account: a[0], Amount: a[1], UserRef: c.Uint64("ref")})
		},
	}
}

func withdrawCommand() *cli.Command {
	return &cli.Command{
		Name: "withdraw", Usage: "move AMOUNT from ACCOUNT to the system account", ArgsUsage: "ACCOUNT AMOUNT",
		Flags: opFlags(),
		Action: func(c *cli.Context) error {
			a, err := args(c, "ACCOUNT", "AMOUNT")
			if err != nil {
				return err
			}
			return submit(c, ledger.Withdrawal{Account: a[0], Amount: a[1], UserRef: c.Uint64("ref")})
		},
	}
}

func transferCommand() *cli.Command {
	return &cli.Command{
		Name: "transfer", Usage: "move AMOUNT from FROM to TO", ArgsUsage: "FROM TO AMOUNT",
		Flags: opFlags(),
		Action: func(c *cli.Context) error {
			a, err := args(c, "FROM", "TO", "AMOUNT")
			if err != nil {
				return err
			}
			return submit(c, ledger.Transfer{From: a[0], To: a[1], Amount: a[2], UserRef: c.Uint64("ref")})
		},
	}
}

// submit sends op, waits for --wait, and prints the outcome. A transaction
// that executed but failed is an error (exit 1); a retry whose idempotency
// key finds the transaction already applied is not: it succeeded before.
func submit(c *cli.Context, op ledger.Op) error {
	level, err := parseWait(c.String("wait"))
	if err != nil {
		return err
	}
	cl, ctx, done, err := dial(c)
	if err != nil {
		return err
	}
	defer done()
	res, err := cl.SubmitAndWait(ctx, op, level)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if err := writeJSON(c.App.Writer, toJSONResult(&res)); err != nil {
			return err
		}
	}
	switch {
	case res.Fail == ledger.Duplicate:
		if !c.Bool("json") {
			fmt.Fprintf(c.App.Writer, "already applied as tx %d (this retry is tx %d)\n", res.DupOf, res.ID)
		}
		return nil
	case res.Fail != ledger.OK:
		return cli.Exit(fmt.Sprintf("tx %d: %s", res.ID, res.Fail), 1)
	case c.Bool("json"):
		return nil
	}
	fmt.Fprintf(c.App.Writer, "tx %d %s %s:", res.ID, res.Kind, level)
	if a := res.Account; a != nil {
		fmt.Fprintf(c.App.Writer, " account %d ledger %d code %d flags %s", a.ID, a.Ledger, a.Code, flagList(a.Flags))
	}
	for _, e := range res.Entries {
		if e.Account != ledger.SystemAccount {
			fmt.Fprintf(c.App.Writer, " account %d %s %+d = %d;", e.Account, e.Column, e.Delta, e.Value)
		}
	}
	fmt.Fprintln(c.App.Writer)
	return nil
}
