package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/server/jsonapi"
	"github.com/lanework/lanework/ledger/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// readFixture serves a ledger with the index, accounts 1..9 (ledger 1; odd
// ones with the History flag) and 300 transfers between them, and returns
// the last transaction.
func readFixture(t *testing.T) (*fixture, ledger.TxID) {
	f := startLedgerServer(t, ledger.Config{Index: true}, Config{}, false)
	ctx := context.Background()
	var ops []ledger.Op
	for a := uint64(1); a <= 9; a++ {
		var fl ledger.AccountFlags
		if a%2 == 1 {
			fl = ledger.History
		}
		ops = append(ops, ledger.CreateAccount{ID: a, Ledger: 1, Code: uint16(a % 3), Flags: fl, UserData: [2]uint64{a % 2, 0}})
	}
	_, err := f.l.SubmitBatchAndWait(ctx, ops, ledger.Committed)
	require.NoError(t, err)
	ops = ops[:0]
	for i := range 300 {
		from, to := uint64(1+i%9), uint64(1+(i*7+3)%9)
		if from == to {
			ops = append(ops, ledger.Deposit{Account: from, Amount: 10})
			continue
		}
		ops = append(ops, ledger.Transfer{From: from, To: to, Amount: uint64(1 + i%5)})
	}
	res, err := f.l.SubmitBatchAndWait(ctx, ops, ledger.Snapshot)
	require.NoError(t, err)
	return f, res[len(res)-1].ID
}

// TestReadsRoundTrip: every read over the client and over HTTP answers
// what the ledger answers, page by page.
func TestReadsRoundTrip(t *testing.T) {
	f, last := readFixture(t)
	c := f.dial(t)
	ctx := context.Background()

	af := ledger.AccountFilter{Debits: true, Credits: true, Limit: 7, Reverse: true}
	for {
		want, err := f.l.AccountTransfers(ctx, 3, af)
		require.NoError(t, err)
		got, err := c.AccountTransfers(ctx, 3, af)
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.Equal(t, last, got.AsOf)
		if got.Next == "" {
			break
		}
		af.Cursor = got.Next
	}
	af.Cursor = ""
	for {
		wb, err := f.l.AccountBalances(ctx, 3, af)
		require.NoError(t, err)
		gb, err := c.AccountBalances(ctx, 3, af)
		require.NoError(t, err)
		require.Equal(t, wb, gb)
		if gb.Next == "" {
			break
		}
		af.Cursor = gb.Next
	}
	qf := ledger.TransferFilter{Ledger: 1, Limit: 50}
	wq, err := f.l.QueryTransfers(ctx, qf)
	require.NoError(t, err)
	gq, err := c.QueryTransfers(ctx, qf)
	require.NoError(t, err)
	require.Equal(t, wq, gq)
	aq := ledger.AccountQuery{Code: 1, Limit: 3}
	wa, err := f.l.QueryAccounts(ctx, aq)
	require.NoError(t, err)
	ga, err := c.QueryAccounts(ctx, aq)
	require.NoError(t, err)
	require.Equal(t, wa, ga)
	require.NotEmpty(t, ga.Accounts)

	accts, info, err := c.LookupAccounts(ctx, []uint64{1, 42, 9})
	require.NoError(t, err)
	require.NotNil(t, accts[0])
	require.Nil(t, accts[1])
	require.Equal(t, uint64(9), accts[2].ID)
	require.Equal(t, last, info.AsOf)
	txs, _, err := c.LookupTransfers(ctx, []ledger.TxID{last, last + 1, 1}, last)
	require.NoError(t, err)
	require.Equal(t, last, txs[0].ID)
	require.Nil(t, txs[1])
	require.Equal(t, ledger.KindCreateAccount, txs[2].Kind)
	wbal, _, err := f.l.BalanceAt(ctx, 5, last-100)
	require.NoError(t, err)
	gbal, _, err := c.BalanceAt(ctx, 5, last-100)
	require.NoError(t, err)
	require.Equal(t, wbal, gbal)

	// HTTP: the same pages as JSON.
	var page struct {
		AsOf      ledger.TxID `json:"as_of"`
		Committed ledger.TxID `json:"committed"`
		Next      string      `json:"next"`
		Transfers []struct {
			ID      ledger.TxID `json:"id"`
			Balance struct {
				CreditsPosted uint64 `json:"credits_posted"`
			} `json:"balance"`
		} `json:"transfers"`
	}
	getJSON(t, f.httpURL()+"/v1/accounts/3/transfers?limit=5&debits=true&credits=true&reverse=true", http.StatusOK, &page)
	want, err := f.l.AccountTransfers(ctx, 3, ledger.AccountFilter{Debits: true, Credits: true, Limit: 5, Reverse: true})
	require.NoError(t, err)
	require.Len(t, page.Transfers, 5)
	for i := range page.Transfers {
		require.Equal(t, want.Transfers[i].ID, page.Transfers[i].ID)
		require.Equal(t, want.Transfers[i].Balance.CreditsPosted, page.Transfers[i].Balance.CreditsPosted)
	}
	require.Equal(t, string(want.Next), page.Next)
	require.Equal(t, last, page.AsOf)
	var q struct {
		Transfers []struct {
			ID ledger.TxID `json:"id"`
		} `json:"transfers"`
	}
	postJSON(t, f.httpURL()+"/v1/query/transfers", `{"limit":50,"ledger":1}`, http.StatusOK, &q)
	require.Len(t, q.Transfers, len(wq.Transfers))
	require.Equal(t, wq.Transfers[0].ID, q.Transfers[0].ID)
	var la struct {
		Accounts []*struct {
			ID uint64 `json:"id"`
		} `json:"accounts"`
	}
	postJSON(t, f.httpURL()+"/v1/lookup/accounts", `{"ids":[2,77]}`, http.StatusOK, &la)
	require.Len(t, la.Accounts, 2)
	require.Equal(t, uint64(2), la.Accounts[0].ID)
	require.Nil(t, la.Accounts[1])
}

func getJSON(t *testing.T, url string, status int, out any) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	return readJSONResp(t, resp, status, out)
}

func postJSON(t *testing.T, url, body string, status int, out any) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	return readJSONResp(t, resp, status, out)
}

func readJSONResp(t *testing.T, resp *http.Response, status int, out any) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, status, resp.StatusCode, string(b))
	if out != nil {
		require.NoError(t, json.Unmarshal(b, out), string(b))
	}
	return string(b)
}

// readBadCases are filters refused on both APIs: each names its field.
// query is the HTTP query string (GET reads) or JSON body (POST reads);
// filter the msgpack map.
var readBadCases = []struct {
	name   string
	typ    wire.Type
	query  string
	filter map[string]any
	field  string
	code   wire.Code
}{
	{"inverted range", wire.TypeAccountTransfers, "limit=5&debits=true&timestamp_min=20&timestamp_max=10",
		map[string]any{"limit": 5, "debits": true, "timestamp_min": 20, "timestamp_max": 10}, "timestamp_min", wire.CodeFilter},
	{"limit above max", wire.TypeAccountTransfers, "limit=8191&debits=true",
		map[string]any{"limit": 8191, "debits": true}, "limit", wire.CodeFilter},
	{"limit zero", wire.TypeAccountBalances, "limit=0&credits=true",
		map[string]any{"limit": 0, "credits": true}, "limit", wire.CodeFilter},
	{"limit missing", wire.TypeAccountTransfers, "debits=true",
		map[string]any{"debits": true}, "limit", wire.CodeMalformed},
	{"no side", wire.TypeAccountTransfers, "limit=5",
		map[string]any{"limit": 5}, "debits", wire.CodeFilter},
	{"unknown field", wire.TypeAccountTransfers, "limit=5&debits=true&colour=red",
		map[string]any{"limit": 5, "debits": true, "colour": "red"}, "colour", wire.CodeMalformed},
	{"field of another read", wire.TypeAccountTransfers, "limit=5&debits=true&ledger=1",
		map[string]any{"limit": 5, "debits": true, "ledger": 1}, "ledger", wire.CodeMalformed},
	{"cursor from another query", wire.TypeAccountTransfers, "limit=5&credits=true&cursor=CURSOR",
		map[string]any{"limit": 5, "credits": true, "cursor": "CURSOR"}, "cursor", wire.CodeFilter},
	{"not a cursor", wire.TypeAccountTransfers, "limit=5&credits=true&cursor=xyz",
		map[string]any{"limit": 5, "credits": true, "cursor": "xyz"}, "cursor", wire.CodeFilter},
	{"bad boolean", wire.TypeAccountTransfers, "limit=5&debits=yes",
		map[string]any{"limit": 5, "debits": "yes"}, "debits", wire.CodeMalformed},
	{"negative", wire.TypeAccountTransfers, "limit=5&debits=true&timestamp_min=-1",
		map[string]any{"limit": 5, "debits": true, "timestamp_min": -1}, "timestamp_min", wire.CodeMalformed},
	{"query inverted", wire.TypeQueryTransfers, `{"limit":5,"timestamp_min":9,"timestamp_max":3}`,
		map[string]any{"limit": 5, "timestamp_min": 9, "timestamp_max": 3}, "timestamp_min", wire.CodeFilter},
	{"query unknown", wire.TypeQueryAccounts, `{"limit":5,"owner":3}`,
		map[string]any{"limit": 5, "owner": 3}, "owner", wire.CodeMalformed},
	{"query ledger range", wire.TypeQueryAccounts, `{"limit":5,"ledger":4294967296}`,
		map[string]any{"limit": 5, "ledger": uint64(1 << 32)}, "ledger", wire.CodeMalformed},
	{"query limit", wire.TypeQueryTransfers, `{"limit":9000}`,
		map[string]any{"limit": 9000}, "limit", wire.CodeFilter},
}

// otherCursor is a cursor of another query (account 5's): refused by
// account 3's.
func otherCursor(t *testing.T, f *fixture) string {
	p, err := f.l.AccountTransfers(context.Background(), 5, ledger.AccountFilter{Credits: true, Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, p.Next)
	return string(p.Next)
}

func TestReadBadInputHTTP(t *testing.T) {
	f, _ := readFixture(t)
	cur := otherCursor(t, f)
	for _, c := range readBadCases {
		var body string
		status := http.StatusBadRequest
		q := strings.ReplaceAll(c.query, "CURSOR", cur)
		switch c.typ {
		case wire.TypeAccountTransfers, wire.TypeAccountBalances:
			path := "transfers"
			if c.typ == wire.TypeAccountBalances {
				path = "balances"
			}
			body = getJSON(t, f.httpURL()+"/v1/accounts/3/"+path+"?"+q, status, nil)
		case wire.TypeQueryTransfers:
			body = postJSON(t, f.httpURL()+"/v1/query/transfers", q, status, nil)
		case wire.TypeQueryAccounts:
			body = postJSON(t, f.httpURL()+"/v1/query/accounts", q, status, nil)
		}
		var je jsonapi.Error
		require.NoError(t, json.Unmarshal([]byte(body), &je), c.name)
		assert.Equal(t, uint16(c.code), je.Code, "%s: %s", c.name, body)
		assert.Contains(t, je.Error, c.field, c.name)
	}
	// Lookups: the id list's bounds.
	body := postJSON(t, f.httpURL()+"/v1/lookup/accounts", `{"ids":[]}`, http.StatusBadRequest, nil)
	assert.Contains(t, body, "ids")
	body = postJSON(t, f.httpURL()+"/v1/lookup/transfers", `{"ids":[1],"wait":3}`, http.StatusBadRequest, nil)
	assert.Contains(t, body, "wait")
	body = getJSON(t, f.httpURL()+"/v1/accounts/2/transfers?limit=5&debits=true", http.StatusBadRequest, nil)
	assert.Contains(t, body, "history")
	body = getJSON(t, f.httpURL()+"/v1/accounts/3/transfers?limit=5&debits=true&debits=false", http.StatusBadRequest, nil)
	assert.Contains(t, body, "debits")
}

func TestReadBadInputMsgpack(t *testing.T) {
	f, _ := readFixture(t)
	cur := otherCursor(t, f)
	r := newRaw(t, f)
	for i, c := range readBadCases {
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		enc.SetSortMapKeys(true)
		filter := map[string]any{}
		for k, v := range c.filter {
			if v == "CURSOR" {
				v = cur
			}
			filter[k] = v
		}
		switch c.typ {
		case wire.TypeAccountTransfers, wire.TypeAccountBalances:
			_ = enc.EncodeArrayLen(2)
			_ = enc.EncodeUint(3)
		default:
			_ = enc.EncodeArrayLen(1)
		}
		require.NoError(t, enc.Encode(filter))
		e := wire.NewEncoder()
		e.Raw(c.typ, uint64(i+1), buf.Bytes())
		r.send(e.Bytes())
		h, body := r.next()
		require.Equal(t, wire.TypeError, h.Type, c.name)
		we, err := r.dec.Error(body)
		require.NoError(t, err)
		assert.Equal(t, c.code, we.Code, "%s: %s", c.name, we.Message)
		assert.Contains(t, we.Message, c.field, c.name)
	}
	r.ping(999) // the connection survives
}

// TestReadsIndexOff: a ledger opened without the index (the default)
// refuses every history and query read with index_off, over msgpack as
// ledger.ErrIndexOff and over HTTP as 501 with code 42, and /v1/status
// says the index is off; the current-state lookups still answer.
func TestReadsIndexOff(t *testing.T) {
	f := startServer(t, Config{})
	ctx := context.Background()
	c := f.dial(t)
	_, err := c.AccountTransfers(ctx, 1, ledger.AccountFilter{Debits: true, Limit: 5})
	require.ErrorIs(t, err, ledger.ErrIndexOff)
	_, err = c.QueryTransfers(ctx, ledger.TransferFilter{Limit: 5})
	require.ErrorIs(t, err, ledger.ErrIndexOff)
	_, _, err = c.LookupTransfers(ctx, []ledger.TxID{1}, 0)
	require.ErrorIs(t, err, ledger.ErrIndexOff)

	u := f.httpURL()
	for _, body := range []string{
		getJSON(t, u+"/v1/accounts/1/transfers?limit=5&debits=true", http.StatusNotImplemented, nil),
		getJSON(t, u+"/v1/accounts/1/balances?limit=5&debits=true", http.StatusNotImplemented, nil),
		postJSON(t, u+"/v1/query/transfers", `{"limit":5}`, http.StatusNotImplemented, nil),
		postJSON(t, u+"/v1/query/accounts", `{"limit":5}`, http.StatusNotImplemented, nil),
		postJSON(t, u+"/v1/lookup/transfers", `{"ids":[1]}`, http.StatusNotImplemented, nil),
	} {
		var je jsonapi.Error
		require.NoError(t, json.Unmarshal([]byte(body), &je), body)
		assert.EqualValues(t, wire.CodeIndexOff, je.Code, body)
		assert.Contains(t, je.Error, "Config.Index", body)
	}
	var acct map[string]any
	getJSON(t, u+"/v1/accounts/1", http.StatusOK, &acct)
	var s jsonStatus
	getJSON(t, u+"/v1/status", http.StatusOK, &s)
	assert.False(t, s.HistoryIndex)

	g, _ := readFixture(t)
	getJSON(t, g.httpURL()+"/v1/status", http.StatusOK, &s)
	assert.True(t, s.HistoryIndex)
}
