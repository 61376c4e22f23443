package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server/jsonapi"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

func balanceCommand() *cli.Command {
	return &cli.Command{
		Name: "balance", Usage: "print ACCOUNT's balance (as of the Snapshot index)", ArgsUsage: "ACCOUNT",
		Flags: append(clientFlags(), jsonFlag()),
		Action: func(c *cli.Context) error {
			a, err := args(c, "ACCOUNT")
			if err != nil {
				return err
			}
			cl, ctx, done, err := dial(c)
			if err != nil {
				return err
			}
			defer done()
			b, err := cl.Balance(ctx, a[0])
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c.App.Writer, jsonapi.Balance{Account: a[0], Balance: b})
			}
			fmt.Fprintln(c.App.Writer, b)
			return nil
		},
	}
}

func txCommand() *cli.Command {
	return &cli.Command{
		Name: "tx", Usage: "print a transaction's status and, once committed, its outcome and entries", ArgsUsage: "ID",
		Flags: append(clientFlags(), jsonFlag()),
		Action: func(c *cli.Context) error {
			a, err := args(c, "ID")
			if err != nil {
				return err
			}
			cl, ctx, done, err := dial(c)
			if err != nil {
				return err
			}
			defer done()
			id := ledger.TxID(a[0])
			lv, err := cl.Status(ctx, id)
			if err != nil {
				return err
			}
			if lv == ledger.Unknown {
				return fmt.Errorf("tx %d: %w", id, ledger.ErrNotFound)
			}
			var res ledger.Result
			if lv >= ledger.Committed {
				if res, err = cl.Result(ctx, id); err != nil {
					return err
				}
			}
			w := c.App.Writer
			if c.Bool("json") {
				out := jsonapi.Tx{ID: uint64(id), Status: lv.String()}
				if lv >= ledger.Committed {
					out.Result = jsonapi.NewResult(&res)
				}
				return writeJSON(w, out)
			}
			fmt.Fprintf(w, "tx %d: %s\n", id, lv)
			if lv < ledger.Committed {
				return nil
			}
			fmt.Fprintf(w, "kind: %s\nresult: %s\n", res.Kind, res.Fail)
			if res.UserRef != 0 {
				fmt.Fprintf(w, "user ref: %d\n", res.UserRef)
			}
			if res.DupOf != 0 {
				fmt.Fprintf(w, "duplicate of: %d\n", res.DupOf)
			}
			for _, e := range res.Entries {
				fmt.Fprintf(w, "entry: account %d %s %+d = %d\n", e.Account, e.Column, e.Delta, e.Value)
			}
			return nil
		},
	}
}

func indexesCommand() *cli.Command {
	return &cli.Command{
		Name: "indexes", Usage: "print the pipeline's progress marks and the lags between them",
		Flags: append(clientFlags(), jsonFlag()),
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return exitcode.Usage("indexes: unexpected arguments %v", c.Args().Slice())
			}
			cl, ctx, done, err := dial(c)
			if err != nil {
				return err
			}
			defer done()
			x, err := cl.Indexes(ctx)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c.App.Writer, jsonapi.Indexes(x))
			}
			fmt.Fprintf(c.App.Writer, "sequenced %d\ncomputed  %d (lag %d)\ncommitted %d (lag %d)\nsnapshot  %d (lag %d)\n",
				x.Sequenced, x.Computed, x.Sequenced-x.Computed, x.Committed, x.Computed-x.Committed,
				x.Snapshot, x.Committed-x.Snapshot)
			return nil
		},
	}
}

func snapshotCommand() *cli.Command {
	return &cli.Command{
		Name:  "snapshot",
		Usage: "make the server write a snapshot now; prints the last transaction it covers once it is durable",
		Description: "The snapshot covers at least every transaction committed when the server received the request;\n" +
			"recovery then replays only the WAL after it. If a durable snapshot already covers everything\n" +
			"committed, its id is printed and nothing is written.",
		Flags: append(clientFlags(), jsonFlag()),
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return exitcode.Usage("snapshot: unexpected arguments %v", c.Args().Slice())
			}
			cl, ctx, done, err := dial(c)
			if err != nil {
				return err
			}
			defer done()
			tx, err := cl.Snapshot(ctx)
			if err != nil {
				return fmt.Errorf("snapshot: %w", err)
			}
			if c.Bool("json") {
				return writeJSON(c.App.Writer, jsonapi.Snapshot{TxID: tx})
			}
			fmt.Fprintf(c.App.Writer, "snapshot at tx %d\n", tx)
			return nil
		},
	}
}
