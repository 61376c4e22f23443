package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/inspect"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

// verifyCommand checks a closed ledger directory offline.
func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check a closed ledger directory: checksums, ids, zero sums, balance chains, snapshots",
		ArgsUsage: " ",
		Flags: []cli.Flag{offlineDirFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print the report as one JSON object"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return exitcode.Usage("verify: takes no arguments, got %d", c.NArg())
			}
			rep, err := inspect.Verify(c.String("dir"))
			if rep == nil {
				return fmt.Errorf("verify %s: %w", c.String("dir"), err)
			}
			w := c.App.Writer
			if c.Bool("json") {
				if err := json.NewEncoder(w).Encode(verifyJSON(rep)); err != nil {
					return err
				}
				if len(rep.Findings) > 0 {
					return cli.Exit("", 1)
				}
				return nil
			}
			fmt.Fprintf(w, "transactions %d..%d (%d) in %d WAL batches, max accounts %d\n",
				rep.FirstTx, rep.LastTx, rep.Transactions, rep.Batches, rep.MaxAccounts)
			if rep.KeptSegments > 0 || rep.RefBlocks > 0 {
				fmt.Fprintf(w, "history index: %d kept WAL segments (not in wal/), %d reference blocks read\n", rep.KeptSegments, rep.RefBlocks)
			}
			if t := rep.TornTail; t != nil {
				fmt.Fprintf(w, "unclean end: %s records end at offset %d, %d bytes after that (never acknowledged; Open drops them); last transaction kept %d\n",
					t.File, t.Offset, t.Dropped, t.LastKept)
			}
			for _, s := range rep.Snapshots {
				fmt.Fprintf(w, "snapshot at tx %d: valid=%t replayed=%t\n", s.TxID, s.Valid, s.Replayed)
			}
			for _, t := range rep.Truncations {
				fmt.Fprintf(w, "recovered: the log was cut after tx %d at %s (ledger recover)\n", t.TruncatedAfter, t.At.Format(time.RFC3339))
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

// verifyReportJSON is verify --json's output.
type verifyReportJSON struct {
	OK           bool               `json:"ok"`
	MaxAccounts  uint64             `json:"max_accounts"`
	FirstTx      ledger.TxID        `json:"first_tx"`
	LastTx       ledger.TxID        `json:"last_tx"`
	Transactions uint64             `json:"transactions"`
	Batches      int                `json:"batches"`
	FromZero     bool               `json:"from_zero"`
	KeptSegments int                `json:"kept_segments"`
	RefBlocks    int                `json:"ref_blocks"`
	TornTail     *ledger.TornTail   `json:"torn_tail"`
	Snapshots    []snapshotJSON     `json:"snapshots"`
	Findings     []corruptErrorJSON `json:"findings"`
	Truncations  []truncationJSON   `json:"truncations"`
}

type snapshotJSON struct {
	TxID     ledger.TxID `json:"tx_id"`
	Valid    bool        `json:"valid"`
	Replayed bool        `json:"replayed"`
}

type corruptErrorJSON struct {
	File    string      `json:"file,omitempty"`
	Offset  int64       `json:"offset"`
	Key     string      `json:"key,omitempty"` // hex
	FirstTx ledger.TxID `json:"first_tx"`
	LastTx  ledger.TxID `json:"last_tx"`
	Reason  string      `json:"reason"`
}

func verifyJSON(rep *inspect.VerifyReport) verifyReportJSON {
	out := verifyReportJSON{OK: len(rep.Findings) == 0, MaxAccounts: rep.MaxAccounts, FirstTx: rep.FirstTx, LastTx: rep.LastTx,
		Transactions: rep.Transactions, Batches: rep.Batches, FromZero: rep.FromZero, KeptSegments: rep.KeptSegments, RefBlocks: rep.RefBlocks, TornTail: rep.TornTail,
		Snapshots: []snapshotJSON{}, Findings: []corruptErrorJSON{}, Truncations: []truncationJSON{}}
	for _, s := range rep.Snapshots {
		out.Snapshots = append(out.Snapshots, snapshotJSON(s))
	}
	for _, f := range rep.Findings {
		out.Findings = append(out.Findings, corruptJSON(f))
	}
	for i := range rep.Truncations {
		out.Truncations = append(out.Truncations, recoverJSON(&rep.Truncations[i]))
	}
	return out
}

func corruptJSON(f *ledger.CorruptError) corruptErrorJSON {
	return corruptErrorJSON{File: f.File, Offset: f.Offset, Key: hex.EncodeToString(f.Key), FirstTx: f.FirstTx, LastTx: f.LastTx, Reason: f.Reason}
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
			err := inspect.Dump(c.String("dir"), ledger.TxID(from), ledger.TxID(to), bw)
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
