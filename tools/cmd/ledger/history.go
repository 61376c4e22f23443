package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/client"
	"github.com/lanework/lanework/ledger/server/jsonapi"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

// pageFlags are the flags of every paged read.
func pageFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "limit", Value: 100, Usage: fmt.Sprintf("most items per page, 1 to %d", ledger.MaxReadLimit)},
		&cli.StringFlag{Name: "since", Usage: "only from this time on: RFC 3339 (2026-12-03T08:00:00Z) or Unix nanoseconds"},
		&cli.StringFlag{Name: "until", Usage: "only up to this time (inclusive): RFC 3339 or Unix nanoseconds"},
		&cli.BoolFlag{Name: "reverse", Usage: "newest first"},
		&cli.StringFlag{Name: "cursor", Usage: "continue after the page that printed this cursor (same filter)"},
		&cli.BoolFlag{Name: "all", Usage: "follow the cursors and print every page"},
		&cli.Uint64Flag{Name: "wait-for", Usage: "wait until the index holds this transaction (read your own write)"},
		jsonFlag(),
	}
}

// parseTime reads a --since/--until value: RFC 3339, or Unix ns.
func parseTime(flag, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	if ns, err := strconv.ParseInt(s, 10, 64); err == nil && ns > 0 {
		return ns, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.UnixNano() <= 0 {
		return 0, exitcode.Usage("--%s %q: want RFC 3339 (2026-12-03T08:00:00Z) or Unix nanoseconds after 1970", flag, s)
	}
	return t.UnixNano(), nil
}

type pageArgs struct {
	limit        int
	since, until int64
	reverse, all bool
	cursor       ledger.Cursor
	waitFor      ledger.TxID
}

func readPageArgs(c *cli.Context) (pageArgs, error) {
	p := pageArgs{limit: c.Int("limit"), reverse: c.Bool("reverse"), all: c.Bool("all"),
		cursor: ledger.Cursor(c.String("cursor")), waitFor: ledger.TxID(c.Uint64("wait-for"))}
	var err error
	if p.since, err = parseTime("since", c.String("since")); err != nil {
		return p, err
	}
	p.until, err = parseTime("until", c.String("until"))
	return p, err
}

func formatTs(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

func historyCommand() *cli.Command {
	return &cli.Command{
		Name:      "history",
		Usage:     "print an account's transfers with its columns after each (accounts created with the history flag)",
		ArgsUsage: "ACCOUNT",
		Description: "Reads the history index as of its AsOf transaction (printed first), oldest first (--reverse: newest\n" +
			"first). A full page ends with its cursor: pass it back with --cursor for the next, or use --all.",
		Flags: append(append(clientFlags(), pageFlags()...),
			&cli.BoolFlag{Name: "debits-only", Usage: "only transfers that debit the account"},
			&cli.BoolFlag{Name: "credits-only", Usage: "only transfers that credit the account"}),
		Action: func(c *cli.Context) error {
			a, err := args(c, "ACCOUNT")
			if err != nil {
				return err
			}
			pa, err := readPageArgs(c)
			if err != nil {
				return err
			}
			if c.Bool("debits-only") && c.Bool("credits-only") {
				return exitcode.Usage("history: --debits-only and --credits-only exclude each other")
			}
			f := ledger.AccountFilter{Debits: !c.Bool("credits-only"), Credits: !c.Bool("debits-only"), MinTimestamp: pa.since,
				MaxTimestamp: pa.until, Limit: pa.limit, Reverse: pa.reverse, Cursor: pa.cursor, WaitFor: pa.waitFor}
			return printPages(c, pa.all, func(ctx context.Context, cl *client.Client, cursor ledger.Cursor) (page, error) {
				f.Cursor = cursor
				p, err := cl.AccountTransfers(ctx, a[0], f)
				if err != nil {
					return page{}, err
				}
				return page{p.ReadInfo, p.Next, jsonapi.NewAccountTransfersPage(&p), func(w io.Writer) { printHistory(w, a[0], &p) }}, nil
			}, pa.cursor)
		},
	}
}

// page is one page of a paged read: what it says of the index, its
// cursor, its JSON form and how to print its items as text.
type page struct {
	read  ledger.ReadInfo
	next  ledger.Cursor
	json  any
	print func(io.Writer)
}

// printPages dials the server and prints the page fetch returns for
// cursor, in JSON (--json) or as text between the index line and the next
// cursor; with all it follows the cursors to the last page.
func printPages(c *cli.Context, all bool, fetch func(context.Context, *client.Client, ledger.Cursor) (page, error), cursor ledger.Cursor) error {
	cl, ctx, done, err := dial(c)
	if err != nil {
		return err
	}
	defer done()
	w := c.App.Writer
	for {
		p, err := fetch(ctx, cl, cursor)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			if err := writeJSON(w, p.json); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(w, "as of tx %d (committed %d)\n", p.read.AsOf, p.read.Committed)
			p.print(w)
			if p.next != "" {
				fmt.Fprintf(w, "next page: --cursor %s\n", p.next)
			}
		}
		if !all || p.next == "" {
			return nil
		}
		cursor = p.next
	}
}

func printHistory(w io.Writer, account uint64, p *ledger.AccountTransfersPage) {
	for _, t := range p.Transfers {
		var delta int64
		for _, e := range t.Entries {
			if e.Account == account {
				if e.Column == ledger.DebitsPosted || e.Column == ledger.DebitsPending {
					delta -= e.Delta
				} else {
					delta += e.Delta
				}
			}
		}
		b := t.Balance
		fmt.Fprintf(w, "tx %d  %s  %-10s %+d  debits_posted %d credits_posted %d debits_pending %d credits_pending %d\n",
			t.ID, formatTs(t.Timestamp), t.Kind, delta, b.DebitsPosted, b.CreditsPosted, b.DebitsPending, b.CreditsPending)
	}
}

func queryCommand() *cli.Command {
	return &cli.Command{
		Name:  "query",
		Usage: "query transfers or accounts by ledger, code, user data and time (the query index)",
		Subcommands: []*cli.Command{
			{
				Name: "transfers", Usage: "transfers (applied transactions that moved money), oldest first",
				Flags: append(append(clientFlags(), pageFlags()...),
					&cli.UintFlag{Name: "ledger", Usage: "only this ledger (0: any)"}),
				Action: func(c *cli.Context) error {
					if c.NArg() != 0 {
						return exitcode.Usage("query transfers: unexpected arguments %v", c.Args().Slice())
					}
					pa, err := readPageArgs(c)
					if err != nil {
						return err
					}
					if c.Uint("ledger") > 1<<32-1 {
						return exitcode.Usage("query transfers: --ledger %d out of range (0 to 4294967295)", c.Uint("ledger"))
					}
					f := ledger.TransferFilter{Ledger: uint32(c.Uint("ledger")), MinTimestamp: pa.since, MaxTimestamp: pa.until,
						Limit: pa.limit, Reverse: pa.reverse, Cursor: pa.cursor, WaitFor: pa.waitFor}
					return printPages(c, pa.all, func(ctx context.Context, cl *client.Client, cursor ledger.Cursor) (page, error) {
						f.Cursor = cursor
						p, err := cl.QueryTransfers(ctx, f)
						if err != nil {
							return page{}, err
						}
						return page{p.ReadInfo, p.Next, jsonapi.NewTransfersPage(&p), func(w io.Writer) {
							for _, t := range p.Transfers {
								fmt.Fprintf(w, "tx %d  %s  %s", t.ID, formatTs(t.Timestamp), t.Kind)
								for _, e := range t.Entries {
									fmt.Fprintf(w, "  %d %s %+d", e.Account, e.Column, e.Delta)
								}
								fmt.Fprintln(w)
							}
						}}, nil
					}, pa.cursor)
				},
			},
			{
				Name: "accounts", Usage: "accounts, in creation order",
				Flags: append(append(clientFlags(), pageFlags()...),
					&cli.UintFlag{Name: "ledger", Usage: "only this ledger (0: any)"},
					&cli.UintFlag{Name: "code", Usage: "only this code (0: any)"},
					&cli.Uint64Flag{Name: "user-data-0", Usage: "with --user-data-1: only this user data (both 0: any)"},
					&cli.Uint64Flag{Name: "user-data-1"}),
				Action: func(c *cli.Context) error {
					if c.NArg() != 0 {
						return exitcode.Usage("query accounts: unexpected arguments %v", c.Args().Slice())
					}
					pa, err := readPageArgs(c)
					if err != nil {
						return err
					}
					if c.Uint("ledger") > 1<<32-1 {
						return exitcode.Usage("query accounts: --ledger %d out of range (0 to 4294967295)", c.Uint("ledger"))
					}
					if c.Uint("code") > 1<<16-1 {
						return exitcode.Usage("query accounts: --code %d out of range (0 to 65535)", c.Uint("code"))
					}
					q := ledger.AccountQuery{Ledger: uint32(c.Uint("ledger")), Code: uint16(c.Uint("code")),
						UserData: [2]uint64{c.Uint64("user-data-0"), c.Uint64("user-data-1")}, MinTimestamp: pa.since,
						MaxTimestamp: pa.until, Limit: pa.limit, Reverse: pa.reverse, Cursor: pa.cursor, WaitFor: pa.waitFor}
					return printPages(c, pa.all, func(ctx context.Context, cl *client.Client, cursor ledger.Cursor) (page, error) {
						q.Cursor = cursor
						p, err := cl.QueryAccounts(ctx, q)
						if err != nil {
							return page{}, err
						}
						return page{p.ReadInfo, p.Next, jsonapi.NewAccountsPage(&p), func(w io.Writer) {
							for _, a := range p.Accounts {
								fmt.Fprintf(w, "account %d  ledger %d  code %d  flags %v  user_data %d,%d  balance %d\n",
									a.ID, a.Ledger, a.Code, a.Flags.Names(), a.UserData[0], a.UserData[1], a.Balance())
							}
						}}, nil
					}, pa.cursor)
				},
			},
		},
	}
}
