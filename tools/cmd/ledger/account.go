package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server/jsonapi"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

func accountCommand() *cli.Command {
	return &cli.Command{
		Name: "account", Usage: "create and look up accounts",
		Subcommands: []*cli.Command{accountCreateCommand(), accountLookupCommand()},
	}
}

func accountCreateCommand() *cli.Command {
	return &cli.Command{
		Name: "create", Usage: "create account ID in --ledger", ArgsUsage: "ID",
		Flags: append(opFlags(),
			&cli.Uint64Flag{Name: "ledger", Usage: "the account's ledger (a currency, say); required, not 0"},
			&cli.Uint64Flag{Name: "code", Usage: "the account's code (its type), 0 to 65535"},
			&cli.StringFlag{Name: "flags", Usage: "comma-separated: debits_must_not_exceed_credits, credits_must_not_exceed_debits, history, closed"},
			&cli.StringFlag{Name: "user-data", Usage: "two comma-separated unsigned integers kept with the account, e.g. 7,0"},
		),
		Action: func(c *cli.Context) error {
			a, err := args(c, "ID")
			if err != nil {
				return err
			}
			if !c.IsSet("ledger") {
				return exitcode.Usage("account create: --ledger is required")
			}
			if c.Uint64("ledger") > 1<<32-1 || c.Uint64("code") > 1<<16-1 {
				return exitcode.Usage("account create: --ledger %d or --code %d out of range", c.Uint64("ledger"), c.Uint64("code"))
			}
			flags, err := parseAccountFlags(c.String("flags"))
			if err != nil {
				return err
			}
			var ud [2]uint64
			if s := c.String("user-data"); s != "" {
				parts := strings.Split(s, ",")
				if len(parts) != 2 {
					return exitcode.Usage("--user-data %q: want two comma-separated integers", s)
				}
				for i, p := range parts {
					if ud[i], err = strconv.ParseUint(strings.TrimSpace(p), 10, 64); err != nil {
						return exitcode.Usage("--user-data %q: %q is not an unsigned integer", s, p)
					}
				}
			}
			return submit(c, ledger.CreateAccount{ID: a[0], Ledger: uint32(c.Uint64("ledger")), Code: uint16(c.Uint64("code")),
				Flags: flags, UserData: ud, UserRef: c.Uint64("ref")})
		},
	}
}

func parseAccountFlags(s string) (ledger.AccountFlags, error) {
	var f ledger.AccountFlags
	if s == "" {
		return 0, nil
	}
	for _, n := range strings.Split(s, ",") {
		b, ok := ledger.AccountFlagByName(strings.TrimSpace(n))
		if !ok {
			return 0, exitcode.Usage("--flags: unknown flag %q", n)
		}
		f |= b
	}
	return f, nil
}

func flagList(f ledger.AccountFlags) string {
	if f == 0 {
		return "none"
	}
	return strings.Join(f.Names(), ",")
}

func accountLookupCommand() *cli.Command {
	return &cli.Command{
		Name: "lookup", Usage: "print account ID and its columns (as of the Snapshot index)", ArgsUsage: "ID",
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
			acct, err := cl.Lookup(ctx, a[0])
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c.App.Writer, jsonapi.NewAccount(&acct, true))
			}
			fmt.Fprintf(c.App.Writer, "account %d ledger %d code %d flags %s user_data %d,%d\n", acct.ID, acct.Ledger, acct.Code, flagList(acct.Flags), acct.UserData[0], acct.UserData[1])
			fmt.Fprintf(c.App.Writer, "debits_posted %d credits_posted %d debits_pending %d credits_pending %d balance %d\n",
				acct.DebitsPosted, acct.CreditsPosted, acct.DebitsPending, acct.CreditsPending, acct.Balance())
			return nil
		},
	}
}
