package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/ledger"
)

// closedLedger writes a few transactions, one of them failed, and closes
// the ledger so the offline commands may read the directory.
func closedLedger(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 16})
	require.NoError(t, err)
	_, last, err := l.SubmitBatch([]ledger.Op{
		ledger.CreateAccount{ID: 1, Ledger: 1, Flags: ledger.DebitsMustNotExceedCredits},
		ledger.CreateAccount{ID: 2, Ledger: 1, Flags: ledger.DebitsMustNotExceedCredits},
		ledger.Deposit{Account: 1, Amount: 100},
		ledger.Transfer{From: 1, To: 2, Amount: 30},
		ledger.Withdrawal{Account: 2, Amount: 31}, // ExceedsCredits
	})
	require.NoError(t, err)
	require.NoError(t, l.Wait(t.Context(), last, ledger.Committed))
	require.NoError(t, l.Close())
	return dir
}

func TestVerifyCommand(t *testing.T) {
	dir := closedLedger(t)
	out, errOut, code := runApp(t, "verify", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "transactions 1..5 (5)")
	assert.True(t, strings.HasSuffix(out, "ok\n"), out)

	_, errOut, code = runApp(t, "verify", "--dir", filepath.Join(dir, "missing"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "verify ")
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line, no stack trace: %q", errOut)

	_, _, code = runApp(t, "verify", "--dir", dir, "extra")
	assert.Equal(t, 2, code)
}

func TestVerifyJSON(t *testing.T) {
	dir := closedLedger(t)
	out, errOut, code := runApp(t, "verify", "--dir", dir, "--json")
	require.Equal(t, 0, code, errOut)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Equal(t, true, rep["ok"])
	assert.Equal(t, float64(5), rep["last_tx"])
	assert.Equal(t, []any{}, rep["findings"])
	assert.Equal(t, float64(0), rep["kept_segments"]) // no history index
	assert.Equal(t, float64(0), rep["ref_blocks"])

	// A segment cut short: one finding naming the file, exit status 1.
	segs, err := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
	require.NoError(t, err)
	require.NotEmpty(t, segs)
	require.NoError(t, os.Truncate(segs[0], 100))
	out, _, code = runApp(t, "verify", "--dir", dir, "--json")
	assert.Equal(t, 1, code)
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Equal(t, false, rep["ok"])
	findings := rep["findings"].([]any)
	require.Len(t, findings, 1)
	assert.Equal(t, "wal/"+filepath.Base(segs[0]), findings[0].(map[string]any)["file"])
}

func TestDumpCommand(t *testing.T) {
	dir := closedLedger(t)
	out, errOut, code := runApp(t, "dump", "--dir", dir, "--from", "4")
	require.Equal(t, 0, code, errOut)
	sc := bufio.NewScanner(strings.NewReader(out))
	var ids []float64
	var fails []any
	for sc.Scan() {
		var tx map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &tx), sc.Text())
		ids = append(ids, tx["id"].(float64))
		fails = append(fails, tx["fail"])
	}
	assert.Equal(t, []float64{4, 5}, ids)
	assert.NotEqual(t, fails[0], fails[1], "the failed withdrawal carries its fail reason")

	_, _, code = runApp(t, "dump", "--dir", dir, "--from", "3", "--to", "2")
	assert.Equal(t, 2, code)
	require.NoError(t, os.RemoveAll(dir))
	_, _, code = runApp(t, "dump", "--dir", dir)
	assert.Equal(t, 1, code)
}
