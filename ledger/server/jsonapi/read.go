package jsonapi

import "github.com/lanework/lanework/ledger"

// The answers of the read API (history, queries, batch lookups).

// Read says what a read's answer is as of (ledger.ReadInfo).
type Read struct {
	AsOf      ledger.TxID `json:"as_of"`
	Through   ledger.TxID `json:"through"`
	Committed ledger.TxID `json:"committed"`
}

// NewRead converts r.
func NewRead(r *ledger.ReadInfo) Read { return Read{r.AsOf, r.Through, r.Committed} }

// AccountBalance is an account's four columns after transaction TxID.
type AccountBalance struct {
	TxID           ledger.TxID `json:"tx_id"`
	Timestamp      int64       `json:"timestamp"`
	DebitsPosted   uint64      `json:"debits_posted"`
	CreditsPosted  uint64      `json:"credits_posted"`
	DebitsPending  uint64      `json:"debits_pending"`
	CreditsPending uint64      `json:"credits_pending"`
}

// NewAccountBalance converts b.
func NewAccountBalance(b *ledger.AccountBalance) AccountBalance {
	return AccountBalance{b.TxID, b.Timestamp, b.DebitsPosted, b.CreditsPosted, b.DebitsPending, b.CreditsPending}
}

// AccountTransfer is a transfer of an account's history and the account's
// columns after it.
type AccountTransfer struct {
	*Result
	Balance AccountBalance `json:"balance"`
}

// AccountTransfersPage is GET /v1/accounts/{id}/transfers.
type AccountTransfersPage struct {
	Read
	Next      ledger.Cursor     `json:"next"`
	Transfers []AccountTransfer `json:"transfers"`
}

// NewAccountTransfersPage converts p.
func NewAccountTransfersPage(p *ledger.AccountTransfersPage) AccountTransfersPage {
	out := AccountTransfersPage{Read: NewRead(&p.ReadInfo), Next: p.Next, Transfers: make([]AccountTransfer, len(p.Transfers))}
	for i := range p.Transfers {
		out.Transfers[i] = AccountTransfer{NewResult(&p.Transfers[i].Result), NewAccountBalance(&p.Transfers[i].Balance)}
	}
	return out
}

// AccountBalancesPage is GET /v1/accounts/{id}/balances.
type AccountBalancesPage struct {
	Read
	Next     ledger.Cursor    `json:"next"`
	Balances []AccountBalance `json:"balances"`
}

// NewAccountBalancesPage converts p.
func NewAccountBalancesPage(p *ledger.AccountBalancesPage) AccountBalancesPage {
	out := AccountBalancesPage{Read: NewRead(&p.ReadInfo), Next: p.Next, Balances: make([]AccountBalance, len(p.Balances))}
	for i := range p.Balances {
		out.Balances[i] = NewAccountBalance(&p.Balances[i])
	}
	return out
}

// BalanceAt is GET /v1/accounts/{id}/balance_at: the columns after a
// transaction.
type BalanceAt struct {
	Read
	Balance AccountBalance `json:"balance"`
}

// NewBalanceAt converts a BalanceAt's answer.
func NewBalanceAt(info *ledger.ReadInfo, b *ledger.AccountBalance) BalanceAt {
	return BalanceAt{NewRead(info), NewAccountBalance(b)}
}

// TransfersPage is POST /v1/query/transfers.
type TransfersPage struct {
	Read
	Next      ledger.Cursor `json:"next"`
	Transfers []*Result     `json:"transfers"`
}

// NewTransfersPage converts p.
func NewTransfersPage(p *ledger.TransfersPage) TransfersPage {
	out := TransfersPage{Read: NewRead(&p.ReadInfo), Next: p.Next, Transfers: make([]*Result, len(p.Transfers))}
	for i := range p.Transfers {
		out.Transfers[i] = NewResult(&p.Transfers[i])
	}
	return out
}

// AccountsPage is POST /v1/query/accounts.
type AccountsPage struct {
	Read
	Next     ledger.Cursor `json:"next"`
	Accounts []*Account    `json:"accounts"`
}

// NewAccountsPage converts p.
func NewAccountsPage(p *ledger.AccountsPage) AccountsPage {
	out := AccountsPage{Read: NewRead(&p.ReadInfo), Next: p.Next, Accounts: make([]*Account, len(p.Accounts))}
	for i := range p.Accounts {
		out.Accounts[i] = NewAccount(&p.Accounts[i], true)
	}
	return out
}

// AccountsFound is POST /v1/lookup/accounts: null where an id names none.
type AccountsFound struct {
	Read
	Accounts []*Account `json:"accounts"`
}

// NewAccountsFound converts a LookupAccounts answer.
func NewAccountsFound(info *ledger.ReadInfo, as []*ledger.Account) AccountsFound {
	out := AccountsFound{Read: NewRead(info), Accounts: make([]*Account, len(as))}
	for i, a := range as {
		if a != nil {
			out.Accounts[i] = NewAccount(a, true)
		}
	}
	return out
}

// TransfersFound is POST /v1/lookup/transfers: null where an id names none.
type TransfersFound struct {
	Read
	Transfers []*Result `json:"transfers"`
}

// NewTransfersFound converts a LookupTransfers answer.
func NewTransfersFound(info *ledger.ReadInfo, rs []*ledger.Result) TransfersFound {
	out := TransfersFound{Read: NewRead(info), Transfers: make([]*Result, len(rs))}
	for i, r := range rs {
		if r != nil {
			out.Transfers[i] = NewResult(r)
		}
	}
	return out
}
