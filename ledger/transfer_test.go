package ledger

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lanework/lanework/ledger/internal/offline"
	"github.com/stretchr/testify/require"
)

// TestTransferFieldsJournaled: a transfer's ledger, code, user data (and
// flags, pending id, timeout) reach its Result as executed, the WAL, Result
// after a reopen, and dump; a Ledger that is not the accounts' fails.
func TestTransferFieldsJournaled(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 16, SnapshotEvery: -1}
	l, err := Open(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	ops := []Op{
		CreateAccount{ID: 10, Ledger: 5}, CreateAccount{ID: 11, Ledger: 5},
		Deposit{Account: 10, Amount: 100},
		Transfer{From: 10, To: 11, Amount: 7, Ledger: 5, Code: 9, UserData: 1 << 60, UserRef: 3},
		Transfer{From: 10, To: 11, Amount: 8, Code: 2},                // ledger 0: the accounts'
		Transfer{From: 10, To: 11, Amount: 9, Ledger: 6, UserData: 4}, // another ledger
		Transfer{From: 10, To: 11, Amount: 7, UserRef: 3},             // a duplicate carries no fields
		Transfer{From: 10, To: 99, Amount: 1, Ledger: 7, Code: 1},     // failed before its accounts were found
	}
	res, err := l.SubmitBatchAndWait(ctx, ops, Committed)
	require.NoError(t, err)
	type fields struct {
		fail   FailReason
		ledger uint32
		code   uint16
		ud     uint64
	}
	want := []fields{{}, {}, {}, {OK, 5, 9, 1 << 60}, {OK, 5, 2, 0}, {TransferMustHaveTheSameLedgerAsAccounts, 6, 0, 4},
		{Duplicate, 0, 0, 0}, {AccountNotFound, 7, 1, 0}}
	for i, r := range res {
		require.Equal(t, want[i], fields{r.Fail, r.Ledger, r.Code, r.UserData}, "op %d", i)
	}
	require.Len(t, res[3].Entries, 2)
	require.NoError(t, l.Close())

	l, err = Open(cfg)
	require.NoError(t, err)
	for _, r := range res {
		got, err := l.Result(r.ID)
		require.NoError(t, err)
		if len(r.Entries) == 0 {
			r.Entries = nil
		}
		require.Equal(t, r, got)
	}
	require.NoError(t, l.Close())

	var lines []offline.Tx
	require.NoError(t, dumpDir(nil, cfg.Dir, uint64(res[3].ID), uint64(res[7].ID), func(t *offline.Tx) error {
		c := *t
		if t.Transfer != nil {
			x := *t.Transfer
			c.Transfer = &x
		}
		lines = append(lines, c)
		return nil
	}))
	require.Len(t, lines, 5)
	require.Equal(t, &offline.Transfer{Ledger: 5, Code: 9, Flags: []string{}, UserData: 1 << 60}, lines[0].Transfer)
	require.Equal(t, &offline.Transfer{Ledger: 6, Flags: []string{}, UserData: 4}, lines[2].Transfer)
	require.Nil(t, lines[3].Transfer) // the duplicate
}

// TestTransferInputErrors: the state-independent rules of a transfer's
// fields, refused at submit.
func TestTransferInputErrors(t *testing.T) {
	cases := []struct {
		op   Transfer
		want error
	}{
		{Transfer{From: 1, To: 2, Amount: 1, Flags: 1 << 12}, ErrTransferFlags},
		{Transfer{From: 1, To: 2, Amount: 1, Flags: Pending | PostPendingTransfer, PendingID: 3}, ErrTransferFlags},
		{Transfer{From: 1, To: 2, Amount: 1, Flags: PostPendingTransfer | VoidPendingTransfer, PendingID: 3}, ErrTransferFlags},
		{Transfer{From: 1, To: 2, Amount: 1, Flags: ClosingDebit}, ErrTransferFlags},
		{Transfer{From: 1, To: 2, Amount: 1, Flags: PostPendingTransfer | BalancingDebit, PendingID: 3}, ErrTransferFlags},
		{Transfer{From: 1, To: 2, Amount: 1, PendingID: 3}, ErrPendingID},
		{Transfer{From: 1, To: 2, Amount: 1, Timeout: 3}, ErrTimeout},
		{Transfer{From: 1, To: 2}, ErrZeroAmount},
		{Transfer{From: 1, To: 1, Amount: 1, Code: 4}, ErrSameAccount},
	}
	l, err := Open(Config{Dir: t.TempDir(), MaxAccounts: 4, SnapshotEvery: -1})
	require.NoError(t, err)
	defer l.Close()
	for _, c := range cases {
		_, err := l.Submit(c.op)
		var ie *InputError
		require.ErrorAs(t, err, &ie, "%+v", c.op)
		require.ErrorIs(t, err, c.want, "%+v", c.op)
	}
}

// TestFormat4Opens: a format 4 directory (its WAL records carry no
// transfer fields) opens; Open rewrites its meta as format 5, so that a
// format 4 build refuses it before it meets a record with them.
func TestFormat4Opens(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 8, SnapshotEvery: -1}
	l, err := Open(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = l.SubmitBatchAndWait(ctx, []Op{CreateAccount{ID: 1, Ledger: 1}, Deposit{Account: 1, Amount: 5}}, Committed)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	downgrade(t, cfg.Dir, formatVersionV4)
	_, err = verifyDir(nil, cfg.Dir)
	require.NoError(t, err)

	l, err = Open(cfg)
	require.NoError(t, err)
	res, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 2}, Committed)
	require.NoError(t, err)
	require.Equal(t, OK, res.Fail)
	require.NoError(t, l.Close())
	withDB(t, cfg.Dir, func(db *pebble.DB) {
		m, err := readMeta(db, "")
		require.NoError(t, err)
		require.Equal(t, formatVersion, m.FormatVersion)
	})
	_, err = verifyDir(nil, cfg.Dir)
	require.NoError(t, err)
}

// TestBatchDecodesFormat4Transfer: a transfer record as format 4 wrote it
// (no 0x40 flag, no fields) decodes with zero fields; the same record with
// the flag decodes them.
func TestBatchDecodesFormat4Transfer(t *testing.T) {
	rec := txRecord{id: 1, ts: 5, kind: KindTransfer, n: 2, ledger: 3, code: 4, userData: 5,
		inline: [2]cellEntry{{acct: 1, delta: 5, value: 5, col: DebitsPosted}, {acct: 2, delta: 5, value: 5, col: CreditsPosted}}}
	v5, _ := encodeBatch(nil, []txRecord{rec}, walMaxBytes)
	got, err := decodeBatchAll(v5)
	require.NoError(t, err)
	require.Equal(t, rec.result(), got[0])

	// Format 4: drop the flag and the 16 bytes of fields after the header.
	v4 := append([]byte{}, v5[:batchHeaderLen+txHeaderLen]...)
	v4[batchHeaderLen] &^= hasXferFlag
	v4 = append(v4, v5[batchHeaderLen+txHeaderLen+xferLen:]...)
	binary.LittleEndian.PutUint32(v4, crc32.Checksum(v4[4:], castagnoli))
	got, err = decodeBatchAll(v4)
	require.NoError(t, err)
	want := rec.result()
	want.Ledger, want.Code, want.UserData = 0, 0, 0
	require.Equal(t, want, got[0])
}

// TestRingSlotSizes: the Sequencer ring copies each request twice and the
// WAL and Snapshotter rings each record: a transfer's fields did not make
// them larger (request 96 bytes as before, record 136 against 144).
func TestRingSlotSizes(t *testing.T) {
	require.Equal(t, uintptr(96), unsafe.Sizeof(request{}))
	require.Equal(t, uintptr(136), unsafe.Sizeof(txRecord{}))
}
