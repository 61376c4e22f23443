package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/ledger"
)

// TestRecoverCommand damages an older WAL segment of a closed ledger, has
// verify name the damage, refuses a cut beyond it, cuts before it, and
// finds a directory that opens and verify lists the cut.
func TestRecoverCommand(t *testing.T) {
	dir := t.TempDir()
	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 100, WALSegmentSize: 256 << 10, WALMaxBatch: 8, SnapshotEvery: -1})
	require.NoError(t, err)
	accts := make([]ledger.Op, 99)
	for i := range accts {
		accts[i] = ledger.CreateAccount{ID: 1 + uint64(i), Ledger: 1}
	}
	_, _, err = l.SubmitBatch(accts)
	require.NoError(t, err)
	var last ledger.TxID
	for i := range 20_000 {
		last, err = l.Submit(ledger.Deposit{Account: 1 + uint64(i)%99, Amount: 1})
		require.NoError(t, err)
	}
	require.NoError(t, l.Wait(context.Background(), last, ledger.Committed))
	require.NoError(t, l.Close())
	segs, err := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
	require.NoError(t, err)
	require.Greater(t, len(segs), 2)
	// The second newest segment rolled over because it was full, so its
	// middle holds records; the first one may have been left early, mostly
	// empty (the WAL leaves the sparse segment Open starts with).
	f, err := os.OpenFile(segs[len(segs)-2], os.O_RDWR, 0)
	require.NoError(t, err)
	b := make([]byte, 1)
	_, err = f.ReadAt(b, 128<<10)
	require.NoError(t, err)
	b[0] ^= 0x40
	_, err = f.WriteAt(b, 128<<10)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	out, _, code := runApp(t, "verify", "--dir", dir, "--json")
	require.Equal(t, 1, code)
	var rep verifyReportJSON
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.NotEmpty(t, rep.Findings)
	first := rep.Findings[0].FirstTx
	require.NotZero(t, first)

	_, errOut, code := runApp(t, "recover", "--dir", dir, "--truncate-after", strconv.FormatUint(uint64(first), 10))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "at or beyond the damage")
	_, _, code = runApp(t, "recover", "--dir", dir)
	require.NotEqual(t, 0, code, "--truncate-after is required")

	out, errOut, code = runApp(t, "recover", "--dir", dir, "--truncate-after", strconv.FormatUint(uint64(first-1), 10), "--json")
	require.Equal(t, 0, code, errOut)
	var tr truncationJSON
	require.NoError(t, json.Unmarshal([]byte(out), &tr))
	require.Equal(t, first-1, tr.TruncatedAfter)
	require.NotNil(t, tr.Damage)
	require.Equal(t, rep.Findings[0].File, tr.Damage.File)

	out, errOut, code = runApp(t, "verify", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "recovered: the log was cut after tx "+strconv.FormatUint(uint64(first-1), 10))
	l, err = ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 100})
	require.NoError(t, err)
	x, err := l.Indexes()
	require.NoError(t, err)
	require.Equal(t, first-1, x.Committed)
	require.NoError(t, l.Close())
}
