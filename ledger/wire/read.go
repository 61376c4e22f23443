package wire

import (
	"fmt"
	"math"

	"github.com/lanework/lanework/ledger"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Read request types: the history and query indexes and batch lookups.
// A filter is a msgpack map of its fields by name (the names of the HTTP
// API's JSON and query strings), so that a field left out takes its zero
// value and an unknown one is refused by name.
const (
	TypeAccountTransfers Type = 0x20 // body [account, filter]; answer TypeAccountTransfersPage
	TypeAccountBalances  Type = 0x21 // body [account, filter]; answer TypeAccountBalancesPage
	TypeQueryTransfers   Type = 0x22 // body [filter]; answer TypeTransfersPage
	TypeQueryAccounts    Type = 0x23 // body [filter]; answer TypeAccountsPage
	TypeLookupAccounts   Type = 0x24 // body [[account...]]; answer TypeAccountsFound
	TypeLookupTransfers  Type = 0x25 // body [[tx_id...], wait_for]; answer TypeTransfersFound
	TypeBalanceAt        Type = 0x26 // body [account, tx_id]; answer TypeBalanceIsAt
)

// Read response types. Every body starts with the read's
// [as_of, through, committed]; a page continues with [next_cursor, [item...]].
const (
	TypeAccountTransfersPage = TypeAccountTransfers | respBit // [..., next, [[result, balance]...]]
	TypeAccountBalancesPage  = TypeAccountBalances | respBit  // [..., next, [balance...]]
	TypeTransfersPage        = TypeQueryTransfers | respBit   // [..., next, [result...]]
	TypeAccountsPage         = TypeQueryAccounts | respBit    // [..., next, [account...]]
	TypeAccountsFound        = TypeLookupAccounts | respBit   // [..., [account or nil...]]
	TypeTransfersFound       = TypeLookupTransfers | respBit  // [..., [result or nil...]]
	TypeBalanceIsAt          = TypeBalanceAt | respBit        // [..., balance]
)

func isReadType(t Type) bool { return t >= TypeAccountTransfers && t <= TypeBalanceAt }

var readTypeNames = map[Type]string{
	TypeAccountTransfers: "account_transfers", TypeAccountBalances: "account_balances",
	TypeQueryTransfers: "query_transfers", TypeQueryAccounts: "query_accounts",
	TypeLookupAccounts: "lookup_accounts", TypeLookupTransfers: "lookup_transfers", TypeBalanceAt: "balance_at",
	TypeAccountTransfersPage: "account_transfers_page", TypeAccountBalancesPage: "account_balances_page",
	TypeTransfersPage: "transfers_page", TypeAccountsPage: "accounts_page", TypeAccountsFound: "accounts_found",
	TypeTransfersFound: "transfers_found", TypeBalanceIsAt: "balance_is_at",
}

func init() {
	for t, n := range readTypeNames {
		typeNames[t] = n
	}
}

// ReadRequest is a decoded read request: which fields are set depends on
// the type.
type ReadRequest struct {
	Account uint64
	Tx      ledger.TxID // TypeBalanceAt
	IDs     []uint64    // TypeLookupAccounts, TypeLookupTransfers
	WaitFor ledger.TxID // TypeLookupTransfers
	Filter  Filter      // the filter types
}

// Filter is every field a read's filter may have; each read type takes a
// subset (FilterFields).
type Filter struct {
	Debits, Credits bool
	Ledger          uint32
	Code            uint16
	UserData        [2]uint64 // accounts: user_data_0, user_data_1
	TransferData    uint64    // transfers: user_data
	TimestampMin    int64
	TimestampMax    int64
	Limit           int
	Reverse         bool
	Cursor          string
	WaitFor         uint64
}

// FilterField describes one filter field.
type FilterField struct {
	Name string
	Kind byte   // 'b' boolean, 'u' unsigned, 's' string
	Max  uint64 // unsigned: the largest value
}

var (
	fDebits    = FilterField{"debits", 'b', 0}
	fCredits   = FilterField{"credits", 'b', 0}
	fLedger    = FilterField{"ledger", 'u', math.MaxUint32}
	fCode      = FilterField{"code", 'u', math.MaxUint16}
	fUserData0 = FilterField{"user_data_0", 'u', math.MaxUint64}
	fUserData1 = FilterField{"user_data_1", 'u', math.MaxUint64}
	fUserData  = FilterField{"user_data", 'u', math.MaxUint64}
	fTsMin     = FilterField{"timestamp_min", 'u', math.MaxInt64}
	fTsMax     = FilterField{"timestamp_max", 'u', math.MaxInt64}
	fLimit     = FilterField{"limit", 'u', math.MaxInt32}
	fReverse   = FilterField{"reverse", 'b', 0}
	fCursor    = FilterField{"cursor", 's', 0}
	fWaitFor   = FilterField{"wait_for", 'u', math.MaxUint64}
)

// FilterFields returns the fields of type t's filter (nil for a type
// without one). limit is required; the others default to zero: no
// bound, any value, false.
func FilterFields(t Type) []FilterField {
	switch t {
	case TypeAccountTransfers, TypeAccountBalances:
		return []FilterField{fDebits, fCredits, fCode, fUserData, fTsMin, fTsMax, fLimit, fReverse, fCursor, fWaitFor}
	case TypeQueryTransfers:
		return []FilterField{fLedger, fCode, fUserData, fTsMin, fTsMax, fLimit, fReverse, fCursor, fWaitFor}
	case TypeQueryAccounts:
		return []FilterField{fLedger, fCode, fUserData0, fUserData1, fTsMin, fTsMax, fLimit, fReverse, fCursor, fWaitFor}
	}
	return nil
}

// Set stores field name's value (u for unsigned, b for boolean, s for
// string fields, as its Kind says).
func (f *Filter) Set(name string, u uint64, b bool, s string) {
	switch name {
	case "debits":
		f.Debits = b
	case "credits":
		f.Credits = b
	case "ledger":
		f.Ledger = uint32(u)
	case "code":
		f.Code = uint16(u)
	case "user_data_0":
		f.UserData[0] = u
	case "user_data_1":
		f.UserData[1] = u
	case "user_data":
		f.TransferData = u
	case "timestamp_min":
		f.TimestampMin = int64(u)
	case "timestamp_max":
		f.TimestampMax = int64(u)
	case "limit":
		f.Limit = int(u)
	case "reverse":
		f.Reverse = b
	case "cursor":
		f.Cursor = s
	case "wait_for":
		f.WaitFor = u
	}
}

// AccountFilter is f as AccountTransfers and AccountBalances take it.
func (f *Filter) AccountFilter() ledger.AccountFilter {
	return ledger.AccountFilter{Debits: f.Debits, Credits: f.Credits, MinTimestamp: f.TimestampMin, MaxTimestamp: f.TimestampMax,
		Code: f.Code, UserData: f.TransferData,
		Limit: f.Limit, Reverse: f.Reverse, Cursor: ledger.Cursor(f.Cursor), WaitFor: ledger.TxID(f.WaitFor)}
}

// TransferFilter is f as QueryTransfers takes it.
func (f *Filter) TransferFilter() ledger.TransferFilter {
	return ledger.TransferFilter{Ledger: f.Ledger, Code: f.Code, UserData: f.TransferData, MinTimestamp: f.TimestampMin, MaxTimestamp: f.TimestampMax,
		Limit: f.Limit, Reverse: f.Reverse, Cursor: ledger.Cursor(f.Cursor), WaitFor: ledger.TxID(f.WaitFor)}
}

// AccountQuery is f as QueryAccounts takes it.
func (f *Filter) AccountQuery() ledger.AccountQuery {
	return ledger.AccountQuery{Ledger: f.Ledger, Code: f.Code, UserData: f.UserData, MinTimestamp: f.TimestampMin,
		MaxTimestamp: f.TimestampMax, Limit: f.Limit, Reverse: f.Reverse, Cursor: ledger.Cursor(f.Cursor), WaitFor: ledger.TxID(f.WaitFor)}
}

// MaxCursor bounds a cursor's length.
const MaxCursor = 64

// readRequest decodes the body of a read request.
func (d *Decoder) readRequest(t Type, r *ReadRequest) error {
	var err error
	switch t {
	case TypeAccountTransfers, TypeAccountBalances:
		if err = d.openExact(2); err == nil {
			if r.Account, err = d.field("account"); err == nil {
				err = d.filter(t, &r.Filter)
			}
		}
	case TypeQueryTransfers, TypeQueryAccounts:
		if err = d.openExact(1); err == nil {
			err = d.filter(t, &r.Filter)
		}
	case TypeLookupAccounts:
		if err = d.openExact(1); err == nil {
			r.IDs, err = d.idList()
		}
	case TypeLookupTransfers:
		var w uint64
		if err = d.openExact(2); err == nil {
			if r.IDs, err = d.idList(); err == nil {
				w, err = d.field("wait_for")
				r.WaitFor = ledger.TxID(w)
			}
		}
	case TypeBalanceAt:
		var tx uint64
		if err = d.openExact(2); err == nil {
			if r.Account, err = d.field("account"); err == nil {
				tx, err = d.field("tx")
				r.Tx = ledger.TxID(tx)
			}
		}
	}
	return err
}

func (d *Decoder) idList() ([]uint64, error) {
	c, _ := d.dec.PeekCode()
	if c == msgpcode.Nil {
		return nil, malformed("ids: nil, want an array")
	}
	n, err := d.arrayLen()
	if err != nil {
		return nil, fmt.Errorf("ids: %w", err)
	}
	if n > ledger.MaxReadLimit {
		return nil, malformed("ids: %d above %d", n, ledger.MaxReadLimit)
	}
	ids := make([]uint64, n)
	for i := range ids {
		v, p := d.uintOf()
		if p != "" {
			return nil, malformed("ids[%d]: %s", i, p)
		}
		ids[i] = v
	}
	return ids, nil
}

// filter decodes a filter map of type t's fields, each at most once.
func (d *Decoder) filter(t Type, f *Filter) error {
	c, err := d.dec.PeekCode()
	if err != nil || !(msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32) {
		what := "missing"
		if err == nil {
			what = codeName(c)
		}
		return malformed("filter: %s, want a map", what)
	}
	n, err := d.dec.DecodeMapLen()
	if err != nil || n > d.r.Len() {
		return malformed("filter: bad map")
	}
	fields := FilterFields(t)
	var seen uint64
	hasLimit := false
	for range n {
		kc, _ := d.dec.PeekCode()
		if !msgpcode.IsString(kc) {
			return malformed("filter: key is %s, want a string", codeName(kc))
		}
		key, err := d.dec.DecodeString()
		if err != nil {
			return malformed("filter: %v", err)
		}
		i := fieldIndex(fields, key)
		if i < 0 {
			return malformed("filter.%.64s: unknown field", key)
		}
		if seen&(1<<i) != 0 {
			return malformed("filter.%s: repeated", key)
		}
		seen |= 1 << i
		ff := fields[i]
		switch ff.Kind {
		case 'b':
			vc, _ := d.dec.PeekCode()
			if vc != msgpcode.True && vc != msgpcode.False {
				return malformed("filter.%s: %s, want a boolean", key, codeName(vc))
			}
			b, _ := d.dec.DecodeBool()
			f.Set(key, 0, b, "")
		case 'u':
			v, p := d.uintOf()
			if p == "" && v > ff.Max {
				p = fmt.Sprintf("%d above %d", v, ff.Max)
			}
			if p != "" {
				return malformed("filter.%s: %s", key, p)
			}
			f.Set(key, v, false, "")
			hasLimit = hasLimit || key == "limit"
		case 's':
			vc, _ := d.dec.PeekCode()
			if !msgpcode.IsString(vc) {
				return malformed("filter.%s: %s, want a string", key, codeName(vc))
			}
			s, err := d.dec.DecodeString()
			if err != nil || len(s) > MaxCursor {
				return malformed("filter.%s: not a cursor", key)
			}
			f.Set(key, 0, false, s)
		}
	}
	if !hasLimit {
		return malformed("filter.limit: missing")
	}
	return nil
}

func fieldIndex(fs []FilterField, name string) int {
	for i := range fs {
		if fs[i].Name == name {
			return i
		}
	}
	return -1
}

// Encoding of requests (the client's).

func (e *Encoder) filter(t Type, f *Filter) {
	fields := FilterFields(t)
	n := 0
	for _, ff := range fields {
		if ff.Name == "limit" || !f.zero(ff.Name) {
			n++
		}
	}
	_ = e.enc.EncodeMapLen(n)
	for _, ff := range fields {
		if ff.Name != "limit" && f.zero(ff.Name) {
			continue
		}
		_ = e.enc.EncodeString(ff.Name)
		switch ff.Name {
		case "debits":
			_ = e.enc.EncodeBool(f.Debits)
		case "credits":
			_ = e.enc.EncodeBool(f.Credits)
		case "reverse":
			_ = e.enc.EncodeBool(f.Reverse)
		case "cursor":
			_ = e.enc.EncodeString(f.Cursor)
		default:
			e.u(f.uint(ff.Name))
		}
	}
}

func (f *Filter) uint(name string) uint64 {
	switch name {
	case "ledger":
		return uint64(f.Ledger)
	case "code":
		return uint64(f.Code)
	case "user_data_0":
		return f.UserData[0]
	case "user_data_1":
		return f.UserData[1]
	case "user_data":
		return f.TransferData
	case "timestamp_min":
		return uint64(f.TimestampMin)
	case "timestamp_max":
		return uint64(f.TimestampMax)
	case "limit":
		return uint64(f.Limit)
	case "wait_for":
		return f.WaitFor
	}
	return 0
}

func (f *Filter) zero(name string) bool {
	switch name {
	case "debits":
		return !f.Debits
	case "credits":
		return !f.Credits
	case "reverse":
		return !f.Reverse
	case "cursor":
		return f.Cursor == ""
	}
	return f.uint(name) == 0
}

// AccountRead appends a TypeAccountTransfers or TypeAccountBalances request.
func (e *Encoder) AccountRead(t Type, id, account uint64, f *Filter) int {
	e.begin(t, id, 2)
	e.u(account)
	e.filter(t, f)
	return e.end()
}

// Query appends a TypeQueryTransfers or TypeQueryAccounts request.
func (e *Encoder) Query(t Type, id uint64, f *Filter) int {
	e.begin(t, id, 1)
	e.filter(t, f)
	return e.end()
}

// LookupAccounts appends a TypeLookupAccounts request.
func (e *Encoder) LookupAccounts(id uint64, accounts []uint64) int {
	e.begin(TypeLookupAccounts, id, 1)
	e.uintList(accounts)
	return e.end()
}

// LookupTransfers appends a TypeLookupTransfers request.
func (e *Encoder) LookupTransfers(id uint64, txs []ledger.TxID, waitFor ledger.TxID) int {
	e.begin(TypeLookupTransfers, id, 2)
	_ = e.enc.EncodeArrayLen(len(txs))
	for _, t := range txs {
		e.u(uint64(t))
	}
	e.u(uint64(waitFor))
	return e.end()
}

// BalanceAt appends a TypeBalanceAt request.
func (e *Encoder) BalanceAt(id, account uint64, tx ledger.TxID) int {
	e.begin(TypeBalanceAt, id, 2)
	e.u(account)
	e.u(uint64(tx))
	return e.end()
}

func (e *Encoder) uintList(vs []uint64) {
	_ = e.enc.EncodeArrayLen(len(vs))
	for _, v := range vs {
		e.u(v)
	}
}

// Encoding of responses (the server's).

func (e *Encoder) readInfo(r *ledger.ReadInfo) {
	e.u(uint64(r.AsOf))
	e.u(uint64(r.Through))
	e.u(uint64(r.Committed))
}

func (e *Encoder) balance(b *ledger.AccountBalance) {
	_ = e.enc.EncodeArrayLen(6)
	e.u(uint64(b.TxID))
	e.i(b.Timestamp)
	e.u(b.DebitsPosted)
	e.u(b.CreditsPosted)
	e.u(b.DebitsPending)
	e.u(b.CreditsPending)
}

func (e *Encoder) account(a *ledger.Account) {
	_ = e.enc.EncodeArrayLen(10)
	e.u(a.ID)
	e.u(uint64(a.Ledger))
	e.u(uint64(a.Code))
	e.u(uint64(a.Flags))
	e.u(a.UserData[0])
	e.u(a.UserData[1])
	e.u(a.DebitsPosted)
	e.u(a.CreditsPosted)
	e.u(a.DebitsPending)
	e.u(a.CreditsPending)
}

// AccountTransfersPage appends a TypeAccountTransfersPage response.
func (e *Encoder) AccountTransfersPage(id uint64, p *ledger.AccountTransfersPage) int {
	e.begin(TypeAccountTransfersPage, id, 5)
	e.readInfo(&p.ReadInfo)
	_ = e.enc.EncodeString(string(p.Next))
	_ = e.enc.EncodeArrayLen(len(p.Transfers))
	for i := range p.Transfers {
		_ = e.enc.EncodeArrayLen(2)
		_ = e.enc.EncodeArrayLen(resultFields)
		e.result(&p.Transfers[i].Result)
		e.balance(&p.Transfers[i].Balance)
	}
	return e.end()
}

// AccountBalancesPage appends a TypeAccountBalancesPage response.
func (e *Encoder) AccountBalancesPage(id uint64, p *ledger.AccountBalancesPage) int {
	e.begin(TypeAccountBalancesPage, id, 5)
	e.readInfo(&p.ReadInfo)
	_ = e.enc.EncodeString(string(p.Next))
	_ = e.enc.EncodeArrayLen(len(p.Balances))
	for i := range p.Balances {
		e.balance(&p.Balances[i])
	}
	return e.end()
}

// TransfersPage appends a TypeTransfersPage response.
func (e *Encoder) TransfersPage(id uint64, p *ledger.TransfersPage) int {
	e.begin(TypeTransfersPage, id, 5)
	e.readInfo(&p.ReadInfo)
	_ = e.enc.EncodeString(string(p.Next))
	_ = e.enc.EncodeArrayLen(len(p.Transfers))
	for i := range p.Transfers {
		_ = e.enc.EncodeArrayLen(resultFields)
		e.result(&p.Transfers[i])
	}
	return e.end()
}

// AccountsPage appends a TypeAccountsPage response.
func (e *Encoder) AccountsPage(id uint64, p *ledger.AccountsPage) int {
	e.begin(TypeAccountsPage, id, 5)
	e.readInfo(&p.ReadInfo)
	_ = e.enc.EncodeString(string(p.Next))
	_ = e.enc.EncodeArrayLen(len(p.Accounts))
	for i := range p.Accounts {
		e.account(&p.Accounts[i])
	}
	return e.end()
}

// AccountsFound appends a TypeAccountsFound response.
func (e *Encoder) AccountsFound(id uint64, info *ledger.ReadInfo, accts []*ledger.Account) int {
	e.begin(TypeAccountsFound, id, 4)
	e.readInfo(info)
	_ = e.enc.EncodeArrayLen(len(accts))
	for _, a := range accts {
		if a == nil {
			_ = e.enc.EncodeNil()
			continue
		}
		e.account(a)
	}
	return e.end()
}

// TransfersFound appends a TypeTransfersFound response.
func (e *Encoder) TransfersFound(id uint64, info *ledger.ReadInfo, res []*ledger.Result) int {
	e.begin(TypeTransfersFound, id, 4)
	e.readInfo(info)
	_ = e.enc.EncodeArrayLen(len(res))
	for _, r := range res {
		if r == nil {
			_ = e.enc.EncodeNil()
			continue
		}
		_ = e.enc.EncodeArrayLen(resultFields)
		e.result(r)
	}
	return e.end()
}

// BalanceIsAt appends a TypeBalanceIsAt response.
func (e *Encoder) BalanceIsAt(id uint64, info *ledger.ReadInfo, b *ledger.AccountBalance) int {
	e.begin(TypeBalanceIsAt, id, 4)
	e.readInfo(info)
	e.balance(b)
	return e.end()
}

// Decoding of responses (the client's). Extra trailing fields of a newer
// server are skipped, as for the other responses.

func (d *Decoder) readInfo(r *ledger.ReadInfo) error {
	var a, t, c uint64
	if err := d.uints(&a, &t, &c); err != nil {
		return err
	}
	r.AsOf, r.Through, r.Committed = ledger.TxID(a), ledger.TxID(t), ledger.TxID(c)
	return nil
}

func (d *Decoder) page(body []byte, info *ledger.ReadInfo, next *ledger.Cursor, item func() error) error {
	d.reset(body)
	extra, err := d.open(5)
	if err != nil {
		return err
	}
	if err := d.readInfo(info); err != nil {
		return err
	}
	s, err := d.dec.DecodeString()
	if err != nil {
		return malformed("next: %v", err)
	}
	*next = ledger.Cursor(s)
	n, err := d.arrayLen()
	if err != nil {
		return err
	}
	for range n {
		if err := item(); err != nil {
			return err
		}
	}
	return d.finish(extra)
}

func (d *Decoder) balanceItem() (ledger.AccountBalance, error) {
	var b ledger.AccountBalance
	m, err := d.arrayLen()
	if err != nil {
		return b, err
	}
	if m < 6 {
		return b, malformed("balance has %d fields, want 6", m)
	}
	var tx uint64
	if err := d.uints(&tx); err != nil {
		return b, err
	}
	b.TxID = ledger.TxID(tx)
	if b.Timestamp, err = d.i(); err != nil {
		return b, err
	}
	if err := d.uints(&b.DebitsPosted, &b.CreditsPosted, &b.DebitsPending, &b.CreditsPending); err != nil {
		return b, err
	}
	return b, d.finishOp(m - 6)
}

func (d *Decoder) resultItem() (ledger.Result, error) {
	m, err := d.arrayLen()
	if err != nil {
		return ledger.Result{}, err
	}
	if m < 7 {
		return ledger.Result{}, malformed("result has %d fields, want 7", m)
	}
	return d.result(m - 7)
}

func (d *Decoder) accountItem() (ledger.Account, error) {
	var a ledger.Account
	m, err := d.arrayLen()
	if err != nil {
		return a, err
	}
	if m < 10 {
		return a, malformed("account has %d fields, want 10", m)
	}
	var lg, code, flags uint64
	if err := d.uints(&a.ID, &lg, &code, &flags, &a.UserData[0], &a.UserData[1],
		&a.DebitsPosted, &a.CreditsPosted, &a.DebitsPending, &a.CreditsPending); err != nil {
		return a, err
	}
	if lg > math.MaxUint32 || code > math.MaxUint16 || flags > math.MaxUint16 {
		return a, malformed("account ledger %d code %d flags %d", lg, code, flags)
	}
	a.Ledger, a.Code, a.Flags = uint32(lg), uint16(code), ledger.AccountFlags(flags)
	return a, d.finishOp(m - 10)
}

// AccountTransfersPage decodes a TypeAccountTransfersPage body.
func (d *Decoder) AccountTransfersPage(body []byte) (ledger.AccountTransfersPage, error) {
	var p ledger.AccountTransfersPage
	err := d.page(body, &p.ReadInfo, &p.Next, func() error {
		m, err := d.arrayLen()
		if err != nil {
			return err
		}
		if m < 2 {
			return malformed("account transfer has %d fields, want 2", m)
		}
		var at ledger.AccountTransfer
		if at.Result, err = d.resultItem(); err != nil {
			return err
		}
		if at.Balance, err = d.balanceItem(); err != nil {
			return err
		}
		p.Transfers = append(p.Transfers, at)
		return d.finishOp(m - 2)
	})
	return p, err
}

// AccountBalancesPage decodes a TypeAccountBalancesPage body.
func (d *Decoder) AccountBalancesPage(body []byte) (ledger.AccountBalancesPage, error) {
	var p ledger.AccountBalancesPage
	err := d.page(body, &p.ReadInfo, &p.Next, func() error {
		b, err := d.balanceItem()
		p.Balances = append(p.Balances, b)
		return err
	})
	return p, err
}

// TransfersPage decodes a TypeTransfersPage body.
func (d *Decoder) TransfersPage(body []byte) (ledger.TransfersPage, error) {
	var p ledger.TransfersPage
	err := d.page(body, &p.ReadInfo, &p.Next, func() error {
		r, err := d.resultItem()
		p.Transfers = append(p.Transfers, r)
		return err
	})
	return p, err
}

// AccountsPage decodes a TypeAccountsPage body.
func (d *Decoder) AccountsPage(body []byte) (ledger.AccountsPage, error) {
	var p ledger.AccountsPage
	err := d.page(body, &p.ReadInfo, &p.Next, func() error {
		a, err := d.accountItem()
		p.Accounts = append(p.Accounts, a)
		return err
	})
	return p, err
}

func (d *Decoder) found(body []byte, info *ledger.ReadInfo, item func(i int) error) error {
	d.reset(body)
	extra, err := d.open(4)
	if err != nil {
		return err
	}
	if err := d.readInfo(info); err != nil {
		return err
	}
	n, err := d.arrayLen()
	if err != nil {
		return err
	}
	for i := range n {
		if c, _ := d.dec.PeekCode(); c == msgpcode.Nil {
			_ = d.dec.Skip()
			continue
		}
		if err := item(i); err != nil {
			return err
		}
	}
	return d.finish(extra)
}

// AccountsFound decodes a TypeAccountsFound body: nil for an id not found.
func (d *Decoder) AccountsFound(body []byte, n int) ([]*ledger.Account, ledger.ReadInfo, error) {
	var info ledger.ReadInfo
	out := make([]*ledger.Account, n)
	err := d.found(body, &info, func(i int) error {
		if i >= n {
			return malformed("more accounts than ids")
		}
		a, err := d.accountItem()
		out[i] = &a
		return err
	})
	return out, info, err
}

// TransfersFound decodes a TypeTransfersFound body: nil for an id not found.
func (d *Decoder) TransfersFound(body []byte, n int) ([]*ledger.Result, ledger.ReadInfo, error) {
	var info ledger.ReadInfo
	out := make([]*ledger.Result, n)
	err := d.found(body, &info, func(i int) error {
		if i >= n {
			return malformed("more transfers than ids")
		}
		r, err := d.resultItem()
		out[i] = &r
		return err
	})
	return out, info, err
}

// BalanceIsAt decodes a TypeBalanceIsAt body.
func (d *Decoder) BalanceIsAt(body []byte) (ledger.AccountBalance, ledger.ReadInfo, error) {
	d.reset(body)
	var info ledger.ReadInfo
	extra, err := d.open(4)
	if err != nil {
		return ledger.AccountBalance{}, info, err
	}
	if err := d.readInfo(&info); err != nil {
		return ledger.AccountBalance{}, info, err
	}
	b, err := d.balanceItem()
	if err != nil {
		return b, info, err
	}
	return b, info, d.finish(extra)
}
