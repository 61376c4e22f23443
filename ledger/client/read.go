package client

import (
	"context"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
)

// The reads of the history and query indexes and the batch lookups: each
// is the ledger method of the same name over the wire, with the same
// filter rules, errors (a *ledger.FilterError is a *wire.Error of code
// CodeFilter here, matching ledger.ErrFilter) and ReadInfo.

// read sends a read request and decodes its answer with dec.
func (c *Client) read(ctx context.Context, want wire.Type, encode func(e *wire.Encoder, id uint64), dec func(d *wire.Decoder, body []byte) error) error {
	_, err := c.doCall(ctx, &call{want: want, read: dec}, encode)
	return err
}

// AccountTransfers returns a page of account's transfers (History
// accounts): ledger.Ledger.AccountTransfers.
func (c *Client) AccountTransfers(ctx context.Context, account uint64, f ledger.AccountFilter) (ledger.AccountTransfersPage, error) {
	var p ledger.AccountTransfersPage
	wf := accountFilter(&f)
	err := c.read(ctx, wire.TypeAccountTransfersPage,
		func(e *wire.Encoder, id uint64) { e.AccountRead(wire.TypeAccountTransfers, id, account, wf) },
		func(d *wire.Decoder, body []byte) (err error) { p, err = d.AccountTransfersPage(body); return err })
	return p, err
}

// AccountBalances returns a page of account's columns after each of its
// transfers: ledger.Ledger.AccountBalances.
func (c *Client) AccountBalances(ctx context.Context, account uint64, f ledger.AccountFilter) (ledger.AccountBalancesPage, error) {
	var p ledger.AccountBalancesPage
	wf := accountFilter(&f)
	err := c.read(ctx, wire.TypeAccountBalancesPage,
		func(e *wire.Encoder, id uint64) { e.AccountRead(wire.TypeAccountBalances, id, account, wf) },
		func(d *wire.Decoder, body []byte) (err error) { p, err = d.AccountBalancesPage(body); return err })
	return p, err
}

// QueryTransfers returns a page of transfers: ledger.Ledger.QueryTransfers.
func (c *Client) QueryTransfers(ctx context.Context, f ledger.TransferFilter) (ledger.TransfersPage, error) {
	var p ledger.TransfersPage
	wf := &wire.Filter{Ledger: f.Ledger, Code: f.Code, TransferData: f.UserData, TimestampMin: f.MinTimestamp, TimestampMax: f.MaxTimestamp, Limit: f.Limit,
		Reverse: f.Reverse, Cursor: string(f.Cursor), WaitFor: uint64(f.WaitFor)}
	err := c.read(ctx, wire.TypeTransfersPage,
		func(e *wire.Encoder, id uint64) { e.Query(wire.TypeQueryTransfers, id, wf) },
		func(d *wire.Decoder, body []byte) (err error) { p, err = d.TransfersPage(body); return err })
	return p, err
}

// QueryAccounts returns a page of accounts: ledger.Ledger.QueryAccounts.
func (c *Client) QueryAccounts(ctx context.Context, q ledger.AccountQuery) (ledger.AccountsPage, error) {
	var p ledger.AccountsPage
	wf := &wire.Filter{Ledger: q.Ledger, Code: q.Code, UserData: q.UserData, TimestampMin: q.MinTimestamp, TimestampMax: q.MaxTimestamp,
		Limit: q.Limit, Reverse: q.Reverse, Cursor: string(q.Cursor), WaitFor: uint64(q.WaitFor)}
	err := c.read(ctx, wire.TypeAccountsPage,
		func(e *wire.Encoder, id uint64) { e.Query(wire.TypeQueryAccounts, id, wf) },
		func(d *wire.Decoder, body []byte) (err error) { p, err = d.AccountsPage(body); return err })
	return p, err
}

// LookupAccounts returns the accounts ids name, nil where not found:
// ledger.Ledger.LookupAccounts.
func (c *Client) LookupAccounts(ctx context.Context, ids []uint64) ([]*ledger.Account, ledger.ReadInfo, error) {
	var out []*ledger.Account
	var info ledger.ReadInfo
	err := c.read(ctx, wire.TypeAccountsFound,
		func(e *wire.Encoder, id uint64) { e.LookupAccounts(id, ids) },
		func(d *wire.Decoder, body []byte) (err error) {
			out, info, err = d.AccountsFound(body, len(ids))
			return err
		})
	return out, info, err
}

// LookupTransfers returns the transactions ids name, nil where not found:
// ledger.Ledger.LookupTransfers.
func (c *Client) LookupTransfers(ctx context.Context, ids []ledger.TxID, waitFor ledger.TxID) ([]*ledger.Result, ledger.ReadInfo, error) {
	var out []*ledger.Result
	var info ledger.ReadInfo
	err := c.read(ctx, wire.TypeTransfersFound,
		func(e *wire.Encoder, id uint64) { e.LookupTransfers(id, ids, waitFor) },
		func(d *wire.Decoder, body []byte) (err error) {
			out, info, err = d.TransfersFound(body, len(ids))
			return err
		})
	return out, info, err
}

// BalanceAt returns account's columns after transaction at:
// ledger.Ledger.BalanceAt.
func (c *Client) BalanceAt(ctx context.Context, account uint64, at ledger.TxID) (ledger.AccountBalance, ledger.ReadInfo, error) {
	var b ledger.AccountBalance
	var info ledger.ReadInfo
	err := c.read(ctx, wire.TypeBalanceIsAt,
		func(e *wire.Encoder, id uint64) { e.BalanceAt(id, account, at) },
		func(d *wire.Decoder, body []byte) (err error) { b, info, err = d.BalanceIsAt(body); return err })
	return b, info, err
}

func accountFilter(f *ledger.AccountFilter) *wire.Filter {
	return &wire.Filter{Debits: f.Debits, Credits: f.Credits, Code: f.Code, TransferData: f.UserData, TimestampMin: f.MinTimestamp, TimestampMax: f.MaxTimestamp,
		Limit: f.Limit, Reverse: f.Reverse, Cursor: string(f.Cursor), WaitFor: uint64(f.WaitFor)}
}
