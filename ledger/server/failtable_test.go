package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
)

// failTable is one batch whose ops fail with every reason a transaction can
// fail with (and succeed), in a fresh ledger of testAccounts accounts at
// most; want is each op's reason.
var failTable = []struct {
	op   ledger.Op
	json string
	want ledger.FailReason
}{
	{ledger.CreateAccount{ID: 1, Ledger: 1, Flags: ledger.DebitsMustNotExceedCredits}, `{"type":"create_account","id":1,"ledger":1,"flags":["debits_must_not_exceed_credits"]}`, ledger.OK},
	{ledger.CreateAccount{ID: 2, Ledger: 1, Flags: ledger.CreditsMustNotExceedDebits}, `{"type":"create_account","id":2,"ledger":1,"flags":["credits_must_not_exceed_debits"]}`, ledger.OK},
	{ledger.CreateAccount{ID: 3, Ledger: 2}, `{"type":"create_account","id":3,"ledger":2}`, ledger.OK},
	{ledger.CreateAccount{ID: 4, Ledger: 1}, `{"type":"create_account","id":4,"ledger":1}`, ledger.OK},
	{ledger.CreateAccount{ID: 1, Ledger: 1, Flags: ledger.DebitsMustNotExceedCredits}, `{"type":"create_account","id":1,"ledger":1,"flags":["debits_must_not_exceed_credits"]}`, ledger.Exists},
	{ledger.CreateAccount{ID: 1, Ledger: 1}, `{"type":"create_account","id":1,"ledger":1}`, ledger.ExistsWithDifferentFlags},
	{ledger.CreateAccount{ID: 1, Ledger: 1, Flags: ledger.DebitsMustNotExceedCredits, UserData: [2]uint64{1, 0}}, `{"type":"create_account","id":1,"ledger":1,"flags":["debits_must_not_exceed_credits"],"user_data_0":1}`, ledger.ExistsWithDifferentUserData},
	{ledger.CreateAccount{ID: 1, Ledger: 9, Flags: ledger.DebitsMustNotExceedCredits}, `{"type":"create_account","id":1,"ledger":9,"flags":["debits_must_not_exceed_credits"]}`, ledger.ExistsWithDifferentLedger},
	{ledger.CreateAccount{ID: 1, Ledger: 1, Code: 5, Flags: ledger.DebitsMustNotExceedCredits}, `{"type":"create_account","id":1,"ledger":1,"code":5,"flags":["debits_must_not_exceed_credits"]}`, ledger.ExistsWithDifferentCode},
	{ledger.Deposit{Account: 1, Amount: 100, UserRef: 7}, `{"type":"deposit","account":1,"amount":100,"user_ref":7}`, ledger.OK},
	{ledger.Deposit{Account: 1, Amount: 100, UserRef: 7}, `{"type":"deposit","account":1,"amount":100,"user_ref":7}`, ledger.Duplicate},
	{ledger.Deposit{Account: 99, Amount: 1}, `{"type":"deposit","account":99,"amount":1}`, ledger.AccountNotFound},
	{ledger.Transfer{From: 1, To: 3, Amount: 1}, `{"type":"transfer","from":1,"to":3,"amount":1}`, ledger.AccountsMustHaveSameLedger},
	{ledger.Transfer{From: 1, To: 4, Amount: 101}, `{"type":"transfer","from":1,"to":4,"amount":101}`, ledger.ExceedsCredits},
	{ledger.Transfer{From: 1, To: 2, Amount: 1}, `{"type":"transfer","from":1,"to":2,"amount":1}`, ledger.ExceedsDebits},
	{ledger.Transfer{From: 4, To: 1, Amount: math.MaxInt64}, `{"type":"transfer","from":4,"to":1,"amount":9223372036854775807}`, ledger.OverflowsCreditsPosted},
	{ledger.Transfer{From: 4, To: 1, Amount: 5}, `{"type":"transfer","from":4,"to":1,"amount":5}`, ledger.OK},
	{ledger.Transfer{From: 4, To: 1, Amount: 5, Ledger: 2, Code: 3}, `{"type":"transfer","from":4,"to":1,"amount":5,"ledger":2,"code":3}`, ledger.TransferMustHaveTheSameLedgerAsAccounts},
	{ledger.Transfer{From: 4, To: 1, Amount: 5, Ledger: 1, Code: 3, UserData: 77}, `{"type":"transfer","from":4,"to":1,"amount":5,"ledger":1,"code":3,"user_data":77}`, ledger.OK},
	{ledger.Composite{Legs: []ledger.Leg{{Account: 4, Delta: -1}, {Account: 1, Delta: 2}}}, `{"type":"composite","legs":[{"account":4,"delta":-1},{"account":1,"delta":2}]}`, ledger.ZeroSumViolation},
	{ledger.Composite{Legs: []ledger.Leg{{Account: 1, Delta: -1}, {Account: 4, Delta: 1}, {Account: 1, Delta: -1}, {Account: 4, Delta: 1},
		{Account: 1, Delta: -1}, {Account: 4, Delta: 1}, {Account: 1, Delta: -1}, {Account: 4, Delta: 1}, {Account: 1, Delta: -1}, {Account: 4, Delta: 1},
		{Account: 1, Delta: -1}, {Account: 4, Delta: 1}, {Account: 1, Delta: -1}, {Account: 4, Delta: 1}, {Account: 1, Delta: -1}, {Account: 4, Delta: 1},
		{Account: 1, Delta: -1}, {Account: 4, Delta: 1}}}, `{"type":"composite","legs":[` +
		`{"account":1,"delta":-1},{"account":4,"delta":1},{"account":1,"delta":-1},{"account":4,"delta":1},{"account":1,"delta":-1},{"account":4,"delta":1},` +
		`{"account":1,"delta":-1},{"account":4,"delta":1},{"account":1,"delta":-1},{"account":4,"delta":1},{"account":1,"delta":-1},{"account":4,"delta":1},` +
		`{"account":1,"delta":-1},{"account":4,"delta":1},{"account":1,"delta":-1},{"account":4,"delta":1},{"account":1,"delta":-1},{"account":4,"delta":1}]}`, ledger.EntryLimitExceeded},
	{ledger.Withdrawal{Account: 4, Amount: math.MaxInt64}, `{"type":"withdrawal","account":4,"amount":9223372036854775807}`, ledger.OverflowsDebitsPosted},
	// A chain whose second member fails: all or nothing.
	{ledger.Deposit{Account: 4, Amount: 1, Linked: true}, `{"type":"deposit","account":4,"amount":1,"linked":true}`, ledger.LinkedEventFailed},
	{ledger.Transfer{From: 1, To: 4, Amount: 1 << 40, Linked: true}, `{"type":"transfer","from":1,"to":4,"amount":1099511627776,"linked":true}`, ledger.ExceedsCredits},
	{ledger.Deposit{Account: 4, Amount: 1}, `{"type":"deposit","account":4,"amount":1}`, ledger.LinkedEventFailed},
	// A chain that applies.
	{ledger.CreateAccount{ID: 5, Ledger: 1, Linked: true}, `{"type":"create_account","id":5,"ledger":1,"linked":true}`, ledger.OK},
	{ledger.Deposit{Account: 5, Amount: 3}, `{"type":"deposit","account":5,"amount":3}`, ledger.OK},
	// A closed account takes no transfer, either side.
	{ledger.CreateAccount{ID: 6, Ledger: 1, Flags: ledger.Closed}, `{"type":"create_account","id":6,"ledger":1,"flags":["closed"]}`, ledger.OK},
	{ledger.Transfer{From: 6, To: 4, Amount: 1}, `{"type":"transfer","from":6,"to":4,"amount":1}`, ledger.DebitAccountAlreadyClosed},
	{ledger.Deposit{Account: 6, Amount: 1}, `{"type":"deposit","account":6,"amount":1}`, ledger.CreditAccountAlreadyClosed},
	// A chain left open by the end of the batch.
	{ledger.Deposit{Account: 4, Amount: 1, Linked: true}, `{"type":"deposit","account":4,"amount":1,"linked":true}`, ledger.LinkedEventChainOpen},
}

// TestEveryFailReasonOnEveryProtocol runs failTable as one batch in process,
// over HTTP and over the binary protocol, each against a fresh ledger, and
// checks each op's own result, and that together they cover every reason.
func TestEveryFailReasonOnEveryProtocol(t *testing.T) {
	seen := map[ledger.FailReason]bool{}
	ops := make([]ledger.Op, len(failTable))
	var body bytes.Buffer
	body.WriteByte('[')
	for i, c := range failTable {
		ops[i] = c.op
		seen[c.want] = true
		if i > 0 {
			body.WriteByte(',')
		}
		body.WriteString(c.json)
	}
	body.WriteByte(']')
	// Every reason but accounts_limit_reached, which needs a full table: a
	// ledger of two slots below; and pending_transfer_expired, which needs
	// time to pass (TestPendingExpiredOnEveryProtocol).
	for f := ledger.OK; int(f) < ledger.NumFailReasons; f++ {
		if f != ledger.AccountsLimitReached && f != ledger.PendingTransferExpired {
			require.True(t, seen[f], "the table misses %v", f)
		}
	}
	check := func(proto string, got []ledger.FailReason) {
		t.Helper()
		require.Len(t, got, len(failTable), proto)
		for i, c := range failTable {
			require.Equal(t, c.want, got[i], "%s: op %d %#v", proto, i, c.op)
		}
	}
	ctx := context.Background()

	f := startServerWith(t, Config{}, false)
	res, err := f.l.SubmitBatchAndWait(ctx, ops, ledger.Committed)
	require.NoError(t, err)
	check("library", fails(res))

	f = startServerWith(t, Config{}, false)
	resp, err := http.Post(f.httpURL()+"/v1/ops?wait=committed", "application/json", &body)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out struct {
		First, Last ledger.TxID
		Results     []struct {
			ID   ledger.TxID `json:"id"`
			Fail string      `json:"fail"`
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, ledger.TxID(1), out.First)
	require.Equal(t, ledger.TxID(len(failTable)), out.Last)
	var hf []ledger.FailReason
	for i, r := range out.Results {
		require.Equal(t, ledger.TxID(i+1), r.ID)
		fr, ok := ledger.FailReasonByName(r.Fail)
		require.True(t, ok, r.Fail)
		hf = append(hf, fr)
	}
	check("http", hf)

	f = startServerWith(t, Config{}, false)
	c := f.dial(t)
	res, err = c.SubmitBatchResults(ctx, ops, ledger.Committed)
	require.NoError(t, err)
	for i, r := range res {
		require.Equal(t, ledger.TxID(i+1), r.ID)
	}
	check("msgpack", fails(res))

	// accounts_limit_reached, on all three: a second server whose ledger
	// has room for the system account and one more.
	dir := t.TempDir()
	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 2})
	require.NoError(t, err)
	s, err := New(l, Config{Addr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	small := &fixture{dir: dir, l: l, s: s}
	t.Cleanup(func() { small.stop(t) })
	r1, err := l.SubmitAndWait(ctx, ledger.CreateAccount{ID: 10, Ledger: 1}, ledger.Committed)
	require.NoError(t, err)
	require.Equal(t, ledger.OK, r1.Fail)
	r1, err = l.SubmitAndWait(ctx, ledger.CreateAccount{ID: 11, Ledger: 1}, ledger.Committed)
	require.NoError(t, err)
	require.Equal(t, ledger.AccountsLimitReached, r1.Fail, "library")
	code, hout := httpDo(t, "POST", small.httpURL()+"/v1/ops", `{"type":"create_account","id":12,"ledger":1}`)
	require.Equal(t, 200, code)
	require.Equal(t, "accounts_limit_reached", hout["fail"], "http")
	r1, err = small.dial(t).SubmitAndWait(ctx, ledger.CreateAccount{ID: 13, Ledger: 1}, ledger.Committed)
	require.NoError(t, err)
	require.Equal(t, ledger.AccountsLimitReached, r1.Fail, "msgpack")
}

// The two-phase rows, before the table's last (a chain its batch leaves
// open): their pending ids are TxIDs, which a fresh ledger hands out from
// 1 in the table's order.
func init() {
	type row = struct {
		op   ledger.Op
		json string
		want ledger.FailReason
	}
	last := failTable[len(failTable)-1]
	rows := failTable[: len(failTable)-1 : len(failTable)-1]
	add := func(op ledger.Transfer, want ledger.FailReason) ledger.TxID {
		id := ledger.TxID(len(rows) + 1)
		js := map[string]any{"type": "transfer"}
		for k, v := range map[string]uint64{"from": op.From, "to": op.To, "amount": op.Amount, "ledger": uint64(op.Ledger),
			"code": uint64(op.Code), "pending_id": uint64(op.PendingID), "timeout": uint64(op.Timeout)} {
			if v != 0 {
				js[k] = v
			}
		}
		js["flags"] = op.Flags.Names()
		b, err := json.Marshal(js)
		if err != nil {
			panic(err)
		}
		rows = append(rows, row{op, string(b), want})
		return id
	}
	const post, void = ledger.PostPendingTransfer, ledger.VoidPendingTransfer
	p := add(ledger.Transfer{From: 4, To: 5, Amount: 10, Flags: ledger.Pending, Timeout: 3600}, ledger.OK)
	add(ledger.Transfer{Flags: post, PendingID: p, Amount: 11}, ledger.ExceedsPendingTransferAmount)
	add(ledger.Transfer{Flags: void, PendingID: p, Amount: 3}, ledger.PendingTransferHasDifferentAmount)
	add(ledger.Transfer{Flags: post, PendingID: p, From: 5}, ledger.PendingTransferHasDifferentDebitAccountID)
	add(ledger.Transfer{Flags: post, PendingID: p, To: 4}, ledger.PendingTransferHasDifferentCreditAccountID)
	add(ledger.Transfer{Flags: post, PendingID: p, Ledger: 2}, ledger.PendingTransferHasDifferentLedger)
	add(ledger.Transfer{Flags: post, PendingID: p, Code: 9}, ledger.PendingTransferHasDifferentCode)
	add(ledger.Transfer{Flags: post, PendingID: p, Amount: 4}, ledger.OK)
	add(ledger.Transfer{Flags: void, PendingID: p}, ledger.PendingTransferAlreadyPosted)
	p2 := add(ledger.Transfer{From: 4, To: 5, Amount: 1, Flags: ledger.Pending}, ledger.OK)
	add(ledger.Transfer{Flags: void, PendingID: p2}, ledger.OK)
	add(ledger.Transfer{Flags: post, PendingID: p2}, ledger.PendingTransferAlreadyVoided)
	add(ledger.Transfer{Flags: post, PendingID: 1 << 40}, ledger.PendingTransferNotFound)
	add(ledger.Transfer{From: 4, To: 5, Amount: math.MaxInt64, Flags: ledger.Pending}, ledger.OK)
	add(ledger.Transfer{From: 4, To: 1, Amount: 1, Flags: ledger.Pending}, ledger.OverflowsDebitsPending)
	add(ledger.Transfer{From: 1, To: 5, Amount: 1, Flags: ledger.Pending}, ledger.OverflowsCreditsPending)
	add(ledger.Transfer{From: 5, To: 4, Amount: 1 << 62, Flags: ledger.BalancingDebit}, ledger.OK) // what 5 holds
	failTable = append(rows, last)
}

func fails(res []ledger.Result) []ledger.FailReason {
	out := make([]ledger.FailReason, len(res))
	for i, r := range res {
		out[i] = r.Fail
	}
	return out
}

// TestPendingExpiredOnEveryProtocol: a pending transfer with a timeout of
// one second, posted after it passed, in process, over HTTP and over the
// binary protocol: pending_transfer_expired, and the transaction that
// posts names the transfer its expiry scan released.
func TestPendingExpiredOnEveryProtocol(t *testing.T) {
	ctx := context.Background()
	f := startServerWith(t, Config{}, false)
	res, err := f.l.SubmitBatchAndWait(ctx, []ledger.Op{ledger.CreateAccount{ID: 1, Ledger: 1}, ledger.CreateAccount{ID: 2, Ledger: 1},
		ledger.Transfer{From: 1, To: 2, Amount: 5, Flags: ledger.Pending, Timeout: 1},
		ledger.Transfer{From: 1, To: 2, Amount: 5, Flags: ledger.Pending, Timeout: 1},
		ledger.Transfer{From: 1, To: 2, Amount: 5, Flags: ledger.Pending, Timeout: 1}}, ledger.Committed)
	require.NoError(t, err)
	require.Equal(t, []ledger.FailReason{ledger.OK, ledger.OK, ledger.OK, ledger.OK, ledger.OK}, fails(res))
	ids := []ledger.TxID{res[2].ID, res[3].ID, res[4].ID}
	deadline := time.Unix(0, res[4].Timestamp).Add(time.Second)
	time.Sleep(time.Until(deadline) + 10*time.Millisecond) // the timeout is the point: let it pass

	r, err := f.l.SubmitAndWait(ctx, ledger.Transfer{Flags: ledger.PostPendingTransfer, PendingID: ids[0]}, ledger.Committed)
	require.NoError(t, err)
	require.Equal(t, ledger.PendingTransferExpired, r.Fail, "library")
	require.Equal(t, ids, r.Expired)
	code, out := httpDo(t, "POST", f.httpURL()+"/v1/ops?wait=committed", fmt.Sprintf(`{"type":"transfer","flags":["void_pending_transfer"],"pending_id":%d}`, ids[1]))
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "pending_transfer_expired", out["fail"], "http")
	r, err = f.dial(t).SubmitAndWait(ctx, ledger.Transfer{Flags: ledger.PostPendingTransfer, PendingID: ids[2], Amount: 1}, ledger.Committed)
	require.NoError(t, err)
	require.Equal(t, ledger.PendingTransferExpired, r.Fail, "msgpack")
	require.NoError(t, f.l.Wait(ctx, r.ID, ledger.Snapshot))
	a, err := f.l.Lookup(1)
	require.NoError(t, err)
	require.Zero(t, a.DebitsPending)
}

// TestTransferInputErrorsOnEveryProtocol: a transfer's flags, pending_id
// and timeout are refused at submit with their own code, in process, over
// HTTP (400, the code and the op's index) and over the binary protocol (an
// *InputError wrapping the sentinel); a flag name JSON does not know names
// the field.
func TestTransferInputErrorsOnEveryProtocol(t *testing.T) {
	ctx := context.Background()
	f := startServerWith(t, Config{}, false)
	c := f.dial(t)
	for _, tc := range []struct {
		op   ledger.Transfer
		json string
		err  error
		code wire.Code
	}{
		{ledger.Transfer{From: 1, To: 2, Amount: 1, Flags: ledger.Pending | ledger.VoidPendingTransfer, PendingID: 3},
			`{"type":"transfer","from":1,"to":2,"amount":1,"flags":["pending","void_pending_transfer"],"pending_id":3}`, ledger.ErrTransferFlags, wire.CodeTransferFlags},
		{ledger.Transfer{Flags: ledger.PostPendingTransfer}, `{"type":"transfer","flags":["post_pending_transfer"]}`, ledger.ErrPendingID, wire.CodePendingID},
		{ledger.Transfer{From: 1, To: 2, Amount: 1, Timeout: 5}, `{"type":"transfer","from":1,"to":2,"amount":1,"timeout":5}`, ledger.ErrTimeout, wire.CodeTimeout},
	} {
		ops := []ledger.Op{ledger.Deposit{Account: 1, Amount: 1}, tc.op}
		_, _, err := f.l.SubmitBatch(ops)
		var ie *ledger.InputError
		require.ErrorAs(t, err, &ie, "library")
		require.ErrorIs(t, err, tc.err, "library")
		require.Equal(t, 1, ie.Index)
		_, err = c.SubmitBatchResults(ctx, ops, ledger.Committed)
		require.ErrorAs(t, err, &ie, "msgpack")
		require.ErrorIs(t, err, tc.err, "msgpack")
		require.Equal(t, 1, ie.Index)
		code, out := httpDo(t, "POST", f.httpURL()+"/v1/ops", `[{"type":"deposit","account":1,"amount":1},`+tc.json+`]`)
		require.Equal(t, http.StatusBadRequest, code, tc.json)
		require.Equal(t, float64(tc.code), out["code"], tc.json)
		require.Equal(t, float64(1), out["index"], tc.json)
	}
	code, out := httpDo(t, "POST", f.httpURL()+"/v1/ops", `{"type":"transfer","from":1,"to":2,"amount":1,"flags":["pendng"]}`)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, out["error"], `op.flags (transfer): unknown flag "pendng"`)
}
