package main

import (
	"bufio"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

// verifyCommand checks a closed ledger directory offline.
func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check a closed ledger directory: checksums, ids, zero sums, balance chains, snapshots",
		ArgsUsage: " ",
		Flags:     []cli.Flag{offlineDirFlag()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return exitcode.Usage("verify: takes no arguments, got %d", c.NArg())
			}
			rep, err := ledger.Verify(c.String("dir"))
			if rep == nil {
				return fmt.Errorf("verify %s: %w", c.String("dir"), err)
			}
			w := c.App.Writer
			fmt.Fprintf(w, "transactions %d..%d (%d) in %d WAL batches, max accounts %d\n",
				rep.FirstTx, rep.LastTx, rep.Transactions, rep.Batches, rep.MaxAccounts)
			if rep.TornTail != nil {
				fmt.Fprintf(w, "torn tail %x (never acknowledged; Open discards it)\n", rep.TornTail)
			}
			for _, s := range rep.Snapshots {
				fmt.Fprintf(w, "snapshot at tx %d: valid=%t replayed=%t\n", s.TxID, s.Valid, s.Replayed)
			}
			for _, f := range rep.Findings {
				fmt.Fprintf(w, "corrupt: %v\n", f)
			}
			if len(rep.Findings) > 0 {
				return cli.Exit(fmt.Sprintf("verify %s: %d findings", c.String("dir"), len(rep.Findings)), 1)
			}
			fmt.Fprintln(w, "ok")
			return nil
		},
	}
}

// dumpCommand prints transactions of a closed ledger directory as NDJSON.
func dumpCommand() *cli.Command {
	return &cli.Command{
		Name:      "dump",
		Usage:     "print the transactions of a closed ledger directory as NDJSON, one per line",
		ArgsUsage: " ",
		Flags: []cli.Flag{offlineDirFlag(),
			&cli.Uint64Flag{Name: "from", Value: 1, Usage: "first transaction id"},
			&cli.Uint64Flag{Name: "to", Usage: "last transaction id (0: through the last)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return exitcode.Usage("dump: takes no arguments, got %d", c.NArg())
			}
			from, to := c.Uint64("from"), c.Uint64("to")
			if to != 0 && to < from {
				return exitcode.Usage("dump: --to %d is before --from %d", to, from)
			}
			bw := bufio.NewWriter(c.App.Writer)
			err := ledger.Dump(c.String("dir"), ledger.TxID(from), ledger.TxID(to), bw)
			if ferr := bw.Flush(); err == nil {
				err = ferr
			}
			if err != nil {
				return fmt.Errorf("dump %s: %w", c.String("dir"), err)
			}
			return nil
		},
	}
}
