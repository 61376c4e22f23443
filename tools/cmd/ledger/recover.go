package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/inspect"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

// recoverCommand cuts a damaged log: the operator's explicit acceptance of
// loss.
func recoverCommand() *cli.Command {
	return &cli.Command{
		Name:  "recover",
		Usage: "cut the damaged WAL of a closed ledger directory after a transaction, accepting the loss of every later one",
		Description: "Open refuses a directory whose WAL is damaged (ledger verify names the file, offset and first transaction\n" +
			"affected). recover keeps the log up to --truncate-after, which must come before the damage, drops every later\n" +
			"transaction, the snapshots that include any of them and their idempotency keys, and records the cut in the\n" +
			"directory (ledger verify lists it; every open logs it). Then the directory opens.",
		ArgsUsage: " ",
		Flags: []cli.Flag{repairDirFlag(),
			&cli.Uint64Flag{Name: "truncate-after", Required: true, Usage: "last transaction to keep (before the damage)"},
			&cli.BoolFlag{Name: "json", Usage: "print what was done as one JSON object"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return exitcode.Usage("recover: takes no arguments, got %d", c.NArg())
			}
			t, err := inspect.Recover(c.String("dir"), ledger.TxID(c.Uint64("truncate-after")))
			if errors.Is(err, ledger.ErrRecover) {
				return cli.Exit(err.Error(), 1)
			}
			if err != nil {
				return fmt.Errorf("recover %s: %w", c.String("dir"), err)
			}
			w := c.App.Writer
			if c.Bool("json") {
				return json.NewEncoder(w).Encode(recoverJSON(t))
			}
			fmt.Fprintf(w, "cut the log after tx %d (kept %d..%d) at %s\n", t.TruncatedAfter, t.FirstTx, t.TruncatedAfter, t.At.Format(time.RFC3339))
			if t.Damage != nil {
				fmt.Fprintf(w, "damage accepted: %v\n", t.Damage)
			}
			for _, s := range t.SnapshotsDropped {
				fmt.Fprintf(w, "snapshot at tx %d dropped (it included transactions after the cut)\n", s)
			}
			fmt.Fprintln(w, "ok: the directory opens")
			return nil
		},
	}
}

func repairDirFlag() *cli.StringFlag {
	f := dirFlag()
	f.Usage = "closed ledger data directory to cut (a directory a server has open is refused)"
	return f
}

// truncationJSON is recover --json's output, and each of verify --json's
// truncations.
type truncationJSON struct {
	TruncatedAfter   ledger.TxID       `json:"truncated_after"`
	FirstTx          ledger.TxID       `json:"first_tx"`
	Damage           *corruptErrorJSON `json:"damage"`
	SnapshotsDropped []ledger.TxID     `json:"snapshots_dropped"`
	At               time.Time         `json:"at"`
}

func recoverJSON(t *inspect.Truncation) truncationJSON {
	out := truncationJSON{TruncatedAfter: t.TruncatedAfter, FirstTx: t.FirstTx, SnapshotsDropped: []ledger.TxID{}, At: t.At}
	out.SnapshotsDropped = append(out.SnapshotsDropped, t.SnapshotsDropped...)
	if t.Damage != nil {
		d := corruptJSON(t.Damage)
		out.Damage = &d
	}
	return out
}
