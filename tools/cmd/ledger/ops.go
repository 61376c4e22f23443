package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/client"
	"github.com/lanework/lanework/ledger/server/jsonapi"
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
		Name: "transfer", Usage: "move AMOUNT from FROM to TO; hold it (--pending), post or void a hold, or link transfers",
		ArgsUsage: "FROM TO AMOUNT | --post ID [AMOUNT] | --void ID | --linked FROM TO AMOUNT FROM TO AMOUNT...",
		Description: "A pending transfer (--pending) holds AMOUNT in the pending columns until a post (--post ID, of all of it or\n" +
			"AMOUNT of it, the rest released) or a void (--void ID) names its transaction id, or its --pending-timeout passes.\n" +
			"--balancing-debit/--balancing-credit move at most AMOUNT, what the account's limit allows;\n" +
			"--closing-debit/--closing-credit (with --pending) close the account until the hold is voided.\n" +
			"--linked takes two or more FROM TO AMOUNT triples and applies them all or none.",
		Flags: append(opFlags(),
			&cli.BoolFlag{Name: "pending", Usage: "hold AMOUNT until a post or void names this transfer's id"},
			&cli.Uint64Flag{Name: "post", Usage: "post the pending transfer `ID` (all of it, or AMOUNT of it)"},
			&cli.Uint64Flag{Name: "void", Usage: "void the pending transfer `ID`"},
			&cli.BoolFlag{Name: "linked", Usage: "the arguments are FROM TO AMOUNT triples, applied as one linked chain"},
			&cli.Uint64Flag{Name: "pending-timeout", Usage: "with --pending: seconds after which the hold expires (0: never)"},
			&cli.Uint64Flag{Name: "ledger", Usage: "the accounts' ledger, checked (0: theirs)"},
			&cli.Uint64Flag{Name: "code", Usage: "the transfer's code, 0 to 65535"},
			&cli.Uint64Flag{Name: "user-data", Usage: "an unsigned integer kept with the transfer"},
			&cli.BoolFlag{Name: "balancing-debit", Usage: "move at most AMOUNT: what FROM's debits may still take"},
			&cli.BoolFlag{Name: "balancing-credit", Usage: "move at most AMOUNT: what TO's credits may still take"},
			&cli.BoolFlag{Name: "closing-debit", Usage: "with --pending: close FROM"},
			&cli.BoolFlag{Name: "closing-credit", Usage: "with --pending: close TO"},
		),
		Action: func(c *cli.Context) error {
			base, err := transferFields(c)
			if err != nil {
				return err
			}
			switch {
			case c.IsSet("post") || c.IsSet("void"):
				flag, id := "post", c.Uint64("post")
				base.Flags |= ledger.PostPendingTransfer
				if c.IsSet("void") {
					flag, id = "void", c.Uint64("void")
					base.Flags = base.Flags&^ledger.PostPendingTransfer | ledger.VoidPendingTransfer
				}
				if id == 0 {
					return exitcode.Usage("transfer --%s: ID must be the pending transfer's transaction id, not 0", flag)
				}
				base.PendingID = ledger.TxID(id)
				switch {
				case flag == "post" && c.NArg() == 1:
					a, err := args(c, "AMOUNT")
					if err != nil {
						return err
					}
					base.Amount = a[0]
				case c.NArg() != 0:
					if _, err := args(c, make([]string, c.NArg())...); err != nil { // a flag put after the arguments
						return err
					}
					return exitcode.Usage("transfer --%s ID: want no arguments%s, got %d", flag, map[string]string{"post": " or AMOUNT"}[flag], c.NArg())
				}
				return submit(c, base)
			case c.Bool("linked"):
				names := make([]string, c.NArg())
				for i := range names {
					names[i] = [...]string{"FROM", "TO", "AMOUNT"}[i%3]
				}
				a, err := args(c, names...)
				if err != nil {
					return err
				}
				if len(a) < 6 || len(a)%3 != 0 {
					return exitcode.Usage("transfer --linked: want two or more FROM TO AMOUNT triples, got %d arguments", len(a))
				}
				ops := make([]ledger.Op, 0, len(a)/3)
				for i := 0; i < len(a); i += 3 {
					t := base
					t.From, t.To, t.Amount, t.Linked = a[i], a[i+1], a[i+2], i+3 < len(a)
					ops = append(ops, t)
				}
				return submitChain(c, ops)
			}
			a, err := args(c, "FROM", "TO", "AMOUNT")
			if err != nil {
				return err
			}
			base.From, base.To, base.Amount = a[0], a[1], a[2]
			return submit(c, base)
		},
	}
}

// transferFields reads the flags every form of transfer shares, and
// refuses combinations a transfer cannot have, naming the flag.
func transferFields(c *cli.Context) (ledger.Transfer, error) {
	t := ledger.Transfer{UserRef: c.Uint64("ref"), UserData: c.Uint64("user-data")}
	if c.Uint64("ledger") > 1<<32-1 {
		return t, exitcode.Usage("transfer: --ledger %d out of range (0 to 4294967295)", c.Uint64("ledger"))
	}
	if c.Uint64("code") > 1<<16-1 {
		return t, exitcode.Usage("transfer: --code %d out of range (0 to 65535)", c.Uint64("code"))
	}
	if c.Uint64("pending-timeout") > 1<<32-1 {
		return t, exitcode.Usage("transfer: --pending-timeout %d out of range (0 to 4294967295 seconds)", c.Uint64("pending-timeout"))
	}
	t.Ledger, t.Code, t.Timeout = uint32(c.Uint64("ledger")), uint16(c.Uint64("code")), uint32(c.Uint64("pending-timeout"))
	set := func(name string, f ledger.TransferFlags) {
		if c.Bool(name) {
			t.Flags |= f
		}
	}
	set("pending", ledger.Pending)
	set("balancing-debit", ledger.BalancingDebit)
	set("balancing-credit", ledger.BalancingCredit)
	set("closing-debit", ledger.ClosingDebit)
	set("closing-credit", ledger.ClosingCredit)
	resolving := c.IsSet("post") || c.IsSet("void")
	switch {
	case c.IsSet("post") && c.IsSet("void"):
		return t, exitcode.Usage("transfer: --post and --void exclude each other")
	case resolving && (c.Bool("pending") || c.Bool("linked")):
		return t, exitcode.Usage("transfer: --post and --void take no --pending or --linked")
	case resolving && t.Flags&(ledger.BalancingDebit|ledger.BalancingCredit|ledger.ClosingDebit|ledger.ClosingCredit) != 0:
		return t, exitcode.Usage("transfer: --post and --void take no --balancing-* or --closing-*")
	case t.Timeout != 0 && !c.Bool("pending"):
		return t, exitcode.Usage("transfer: --pending-timeout needs --pending")
	case t.Flags&(ledger.ClosingDebit|ledger.ClosingCredit) != 0 && !c.Bool("pending"):
		return t, exitcode.Usage("transfer: --closing-debit and --closing-credit need --pending")
	}
	return t, nil
}

// submitChain sends ops as one batch (a linked chain), waits for --wait and
// prints each op's outcome. A chain that failed is an error (exit 1).
func submitChain(c *cli.Context, ops []ledger.Op) error {
	level, err := parseWait(c.String("wait"))
	if err != nil {
		return err
	}
	cl, ctx, done, err := dial(c)
	if err != nil {
		return err
	}
	defer done()
	res, err := cl.SubmitBatchResults(ctx, ops, level)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		out := make([]*jsonapi.Result, len(res))
		for i := range res {
			out[i] = jsonapi.NewResult(&res[i])
		}
		if err := writeJSON(c.App.Writer, out); err != nil {
			return err
		}
	}
	var failed *ledger.Result
	for i := range res {
		r := &res[i]
		if r.Fail != ledger.OK && r.Fail != ledger.LinkedEventFailed {
			failed = r
		}
		if !c.Bool("json") {
			fmt.Fprintf(c.App.Writer, "tx %d %s %s\n", r.ID, r.Kind, r.Fail)
		}
	}
	if failed != nil {
		return cli.Exit(fmt.Sprintf("chain failed: tx %d: %s", failed.ID, failed.Fail), 1)
	}
	return nil
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
		if err := writeJSON(c.App.Writer, jsonapi.NewResult(&res)); err != nil {
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
	if res.Kind == ledger.KindTransfer && (res.Flags != 0 || res.Code != 0 || res.UserData != 0) {
		fmt.Fprintf(c.App.Writer, " ledger %d code %d user_data %d flags %s", res.Ledger, res.Code, res.UserData, strings.Join(res.Flags.Names(), ","))
		if res.PendingID != 0 {
			fmt.Fprintf(c.App.Writer, " pending_id %d", res.PendingID)
		}
		if res.Timeout != 0 {
			fmt.Fprintf(c.App.Writer, " timeout %ds", res.Timeout)
		}
		fmt.Fprint(c.App.Writer, ";")
	}
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
