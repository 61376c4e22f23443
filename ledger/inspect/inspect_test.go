package inspect_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/inspect"
)

// fillLedger writes n transactions to a new ledger in cfg.Dir and closes
// it: first the accounts 1 .. MaxAccounts-1 (with
// DebitsMustNotExceedCredits), then mixed deposits, transfers, composites,
// failures and duplicates.
func fillLedger(t *testing.T, cfg ledger.Config, n int) {
	t.Helper()
	l, err := ledger.Open(cfg)
	require.NoError(t, err)
	var create []ledger.Op
	for a := uint64(1); a < cfg.MaxAccounts; a++ {
		create = append(create, ledger.CreateAccount{ID: a, Ledger: 1, Flags: ledger.DebitsMustNotExceedCredits})
	}
	_, last, err := l.SubmitBatch(create)
	require.NoError(t, err)
	for i := int(last); i < n; i++ {
		u := uint64(i)
		var op ledger.Op
		switch i % 5 {
		case 0, 1:
			op = ledger.Deposit{Account: 1 + u%7, Amount: 10 + u%13, UserRef: 1000 + u}
		case 2:
			op = ledger.Transfer{From: 1 + u%7, To: 1 + (u+3)%7, Amount: 7}
		case 3:
			op = ledger.Composite{Legs: []ledger.Leg{{Account: 2, Delta: -3}, {Account: 4, Delta: 2}, {Account: 5, Delta: 1}}, Flags: ledger.NoNegative}
		case 4:
			op = ledger.Withdrawal{Account: 1 + u%7, Amount: 1 << 40, UserRef: 1000 + u - 4} // fails: duplicate or funds
		}
		id, err := l.Submit(op)
		require.NoError(t, err)
		last = id
	}
	require.NoError(t, l.Wait(context.Background(), last, ledger.Snapshot))
	require.NoError(t, l.Close())
}

func TestVerifyClean(t *testing.T) {
	cfg := ledger.Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: 300, WALRetention: -1, WALMaxBatch: 32}
	fillLedger(t, cfg, 1000)
	rep, err := inspect.Verify(cfg.Dir)
	require.NoError(t, err)
	require.Empty(t, rep.Findings)
	require.True(t, rep.FromZero)
	require.Equal(t, ledger.TxID(1), rep.FirstTx)
	require.Equal(t, ledger.TxID(1000), rep.LastTx)
	require.Equal(t, uint64(1000), rep.Transactions)
	require.Equal(t, uint64(8), rep.MaxAccounts)
	require.Nil(t, rep.TornTail)
	require.NotEmpty(t, rep.Snapshots)
	for _, s := range rep.Snapshots {
		require.True(t, s.Valid && s.Replayed, "%+v", s)
	}
}

// A damaged record the engine refuses is a finding, a *ledger.CorruptError
// naming the pebble key, and the error joins the findings.
func TestVerifyReportsFindings(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("x"), nil, pebble.Sync))
	require.NoError(t, db.Close())
	rep, err := inspect.Verify(dir)
	require.ErrorIs(t, err, ledger.ErrCorrupt)
	require.NotNil(t, rep)
	require.Len(t, rep.Findings, 1)
	require.ErrorIs(t, err, rep.Findings[0])
	require.ErrorIs(t, inspect.Dump(dir, 0, 0, &bytes.Buffer{}), ledger.ErrCorrupt)
}

func TestOfflineToolsRefuseNonLedger(t *testing.T) {
	rep, err := inspect.Verify(t.TempDir() + "/missing")
	require.Error(t, err)
	require.Nil(t, rep)
	empty := t.TempDir()
	_, err = inspect.Verify(empty)
	require.ErrorIs(t, err, ledger.ErrNoLedger)
	require.ErrorIs(t, inspect.Dump(empty, 0, 0, &bytes.Buffer{}), ledger.ErrNoLedger)
	left, err := os.ReadDir(empty)
	require.NoError(t, err)
	require.Empty(t, left, "the tools leave a directory as it was")
}

func TestDump(t *testing.T) {
	cfg := ledger.Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1, WALMaxBatch: 8}
	fillLedger(t, cfg, 100)
	var buf bytes.Buffer
	require.NoError(t, inspect.Dump(cfg.Dir, 5, 24, &buf))
	sc := bufio.NewScanner(&buf)
	want := ledger.TxID(5)
	for sc.Scan() {
		var tx inspect.DumpTx
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&tx))
		require.Equal(t, want, tx.ID)
		require.NotNil(t, tx.Entries)
		var sum int64 // credits minus debits
		for _, e := range tx.Entries {
			if strings.HasPrefix(e.Column, "debits_") {
				sum -= e.Delta
			} else {
				sum += e.Delta
			}
		}
		require.Zero(t, sum)
		switch {
		case want <= 7:
			require.Equal(t, "create_account", tx.Kind)
			require.Equal(t, &inspect.DumpAccount{ID: uint64(want), Ledger: 1, Flags: uint16(ledger.DebitsMustNotExceedCredits)}, tx.Account)
		case want%5 == 1: // i%5 == 0: a deposit with a ref
			require.Equal(t, "deposit", tx.Kind)
			require.Equal(t, "ok", tx.Fail)
			require.Equal(t, uint64(1000+want-1), tx.UserRef)
		case want%5 == 0: // i%5 == 4: a withdrawal reusing the ref of tx want-4
			if want-4 <= 7 { // tx want-4 created an account, without a ref
				require.Equal(t, "exceeds_credits", tx.Fail)
			} else {
				require.Equal(t, "duplicate", tx.Fail)
				require.Equal(t, want-4, tx.DupOf)
			}
			require.Empty(t, tx.Entries)
		}
		want++
	}
	require.NoError(t, sc.Err())
	require.Equal(t, ledger.TxID(25), want)

	buf.Reset()
	require.NoError(t, inspect.Dump(cfg.Dir, 0, 0, &buf))
	require.Equal(t, 100, bytes.Count(buf.Bytes(), []byte("\n")))
}
