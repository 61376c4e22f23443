package ledger

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lanework/lanework/ledger/internal/wal"
	"github.com/stretchr/testify/require"
)

// fillPipeLedger writes a log of every form Open's replay hands over:
// account creations, plain deposits and transfers, and others (UserRefs,
// failures, composites of two and three legs, pending transfers and posts).
func fillPipeLedger(t *testing.T, cfg Config) {
	t.Helper()
	l, err := Open(cfg)
	require.NoError(t, err)
	createAccounts(t, l, cfg.MaxAccounts)
	var last TxID
	for i := uint64(0); i < 90; i++ {
		a, b := 1+i%7, 1+(i+3)%7
		var op Op
		switch i % 9 {
		case 0, 1:
			op = Deposit{Account: a, Amount: 10 + i}
		case 2, 3:
			op = Transfer{From: a, To: b, Amount: 3}
		case 4:
			op = Deposit{Account: b, Amount: 5, UserRef: 1000 + i}
		case 5:
			op = Composite{Legs: []Leg{{Account: a, Delta: -2}, {Account: b, Delta: 2}}}
		case 6:
			op = Composite{Legs: []Leg{{Account: 2, Delta: -3}, {Account: 4, Delta: 2}, {Account: 5, Delta: 1}}}
		case 7:
			op = Withdrawal{Account: a, Amount: 1 << 40} // fails
		case 8:
			op = Transfer{From: a, To: b, Amount: 4, Flags: Pending}
		}
		last, err = l.Submit(op)
		require.NoError(t, err)
		if i%9 == 8 {
			last, err = l.Submit(Transfer{Flags: PostPendingTransfer, PendingID: last})
			require.NoError(t, err)
		}
	}
	require.NoError(t, l.Wait(t.Context(), last, Committed))
	require.NoError(t, l.Close())
}

// replayBoth recovers dir twice from a read-only store: by Open's replay
// (the pipe) and by replaying every batch in order on one goroutine
// (replayBatch, the follower's path, which hands nothing over).
func replayBoth(t *testing.T, cfg Config) (pipe, seq *recovered, perr, serr error) {
	t.Helper()
	cfg, err := cfg.withDefaults()
	require.NoError(t, err)
	db, err := pebble.Open(cfg.Dir, &pebble.Options{ReadOnly: true, Logger: quietLogger{}})
	require.NoError(t, err)
	defer db.Close()
	pipe, perr = recoverState(db, &cfg)
	mem := newRecoveryMem(cfg.MaxAccounts)
	seq = &recovered{snapAccounts: 1, bal: mem.bal, accts: mem.accts, dedup: newDedup(cfg.DedupWindow),
		book: newPendingBook(fateRetentionOf(&cfg)), closed: mem.closed}
	_, serr = wal.Scan(walOptions(&cfg, nil, nil), wal.Bounds{}, 0, func(_ wal.Segment, _ int64, p []byte) error {
		b, err := parseBatch(p)
		if err != nil {
			return err
		}
		return replayBatch(&b, seq)
	})
	return pipe, seq, perr, serr
}

// Open's replay reaches the state the sequential replay of every
// transaction reaches, and refuses damage with the same reason: a result
// that does not continue the cell (in a plain transaction, a creation's
// neighbour or any other), an account never created, one created twice.
func TestReplayPipeMatchesSequential(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 16, SnapshotEvery: -1, WALMaxBatch: 8}
	fillPipeLedger(t, cfg)
	pipe, seq, perr, serr := replayBoth(t, cfg)
	require.NoError(t, perr)
	require.NoError(t, serr)
	require.Equal(t, seq.last, pipe.last)
	require.Equal(t, seq.replayed, pipe.replayed)
	require.Equal(t, seq.lastTs, pipe.lastTs)
	require.Equal(t, seq.accts.n, pipe.accts.n)
	require.Equal(t, seq.accts.meta, pipe.accts.meta)
	for i := range seq.bal {
		require.Equal(t, seq.bal[i].Load(), pipe.bal[i].Load(), "cell %d", i)
	}

	// Every transaction of every fourth batch, damaged in turn in each way
	// that applies to it.
	pristine := copyDir(t, cfg.Dir)
	forms := map[string]int{}
	for bi, b := range walBatches(t, pristine) {
		br, err := openBatch(b.batch)
		require.NoError(t, err)
		var tx walTx
		for k := 0; ; k++ {
			start := br.off
			ok, err := br.next(&tx)
			require.NoError(t, err)
			if !ok {
				break
			}
			var damages []func(batch []byte)
			switch {
			case bi%4 != 1:
				// every fourth batch: its transactions hold every form
			case tx.kind == KindCreateAccount && tx.fail == OK && tx.userRef == 0:
				at := start + txHeaderLen
				damages = append(damages, func(batch []byte) { binary.LittleEndian.PutUint64(batch[at:], 1) }) // created twice
				forms["create"]++
			case tx.n > 0:
				at := cap(b.batch) - cap(tx.raw)
				damages = append(damages,
					func(batch []byte) {
						binary.LittleEndian.PutUint64(batch[at+17:], binary.LittleEndian.Uint64(batch[at+17:])+1)
					},
					func(batch []byte) { binary.LittleEndian.PutUint64(batch[at:], 999) }) // never created
				if tx.kind != KindCreateAccount && tx.userRef == 0 && tx.nexp == 0 && tx.n <= 2 && tx.xfer.flags&(Pending|resolving) == 0 {
					forms["plain"]++
				} else {
					forms["other"]++
				}
			}
			for di, damage := range damages {
				t.Run(fmt.Sprintf("batch%d/tx%d/damage%d", bi, k, di), func(t *testing.T) {
					dir := copyDir(t, pristine)
					c := cfg
					c.Dir = dir
					target := b
					target.file = dir + b.file[len(pristine):]
					patchBatch(t, target, func(batch []byte) { damage(batch); resealBatch(batch) })
					_, _, perr, serr := replayBoth(t, c)
					require.Error(t, serr)
					var ce *CorruptError
					require.ErrorAs(t, perr, &ce)
					require.Equal(t, serr.Error(), ce.Reason)
					require.Equal(t, TxID(b.first), ce.FirstTx)
					require.Equal(t, b.off, ce.Offset)
				})
			}
		}
	}
	require.Positive(t, forms["create"])
	require.Positive(t, forms["plain"])
	require.Positive(t, forms["other"])
}

// The fast decoders accept only what next accepts, and decode it as next
// does; for anything else they change nothing.
func requireFastDecodersAgree(t *testing.T, val []byte) {
	t.Helper()
	b, err := openBatch(val)
	if err != nil {
		return
	}
	var tx walTx
	for {
		at, i := b.off, b.i
		var es [2]Entry
		var m acctMeta
		id, ts, plain := b.nextPlain(&es)
		created := false
		if !plain {
			require.Equal(t, [2]int{at, int(i)}, [2]int{b.off, int(b.i)}, "nextPlain refused and moved")
			id, ts, created = b.nextCreate(&m)
			if !created {
				require.Equal(t, [2]int{at, int(i)}, [2]int{b.off, int(b.i)}, "nextCreate refused and moved")
			}
		}
		fastOff, fastI := b.off, b.i
		b.off, b.i = at, i
		ok, err := b.next(&tx)
		if !plain && !created {
			if err != nil || !ok {
				return
			}
			continue
		}
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, [2]int{b.off, int(b.i)}, [2]int{fastOff, int(fastI)})
		require.Equal(t, tx.id, id)
		require.Equal(t, tx.ts, ts)
		require.Zero(t, tx.userRef)
		require.Zero(t, tx.nexp)
		require.Equal(t, OK, tx.fail)
		if plain {
			require.Equal(t, 2, tx.n)
			require.Equal(t, []Entry{tx.entry(0), tx.entry(1)}, es[:])
			require.Contains(t, []Kind{KindDeposit, KindTransfer}, tx.kind)
			require.Zero(t, tx.xfer.flags&(Pending|resolving))
		} else {
			require.Equal(t, KindCreateAccount, tx.kind)
			require.Zero(t, tx.n)
			require.Equal(t, tx.acct, m)
		}
	}
}

// The fast decoders against next on the fuzz seeds, a batch of the forms
// they take, and every one-byte change of it (resealed).
func TestFastDecodersAgree(t *testing.T) {
	for _, s := range walSeeds() {
		requireFastDecodersAgree(t, s)
		if len(s) > 4 {
			requireFastDecodersAgree(t, sealRecord(s[4:]))
		}
	}
	create := txRecord{id: 40, ts: 100, kind: KindCreateAccount}
	create.setAccount(acctMeta{id: 9, userData: [2]uint64{1, 2}, ledger: 3, code: 4, flags: History})
	recs := []txRecord{
		create,
		{id: 41, ts: 101, kind: KindDeposit, n: 2, inline: [2]cellEntry{{acct: 0, delta: 5, value: 5, col: DebitsPosted}, {acct: 9, delta: 5, value: 5, col: CreditsPosted}}},
		{id: 42, ts: 102, kind: KindTransfer, n: 2, ledger: 3, code: 1, userData: 7, tflags: BalancingDebit,
			inline: [2]cellEntry{{acct: 9, delta: 2, value: 2, col: DebitsPosted}, {acct: 0, delta: 2, value: 7, col: CreditsPosted}}},
		{id: 43, ts: 103, kind: KindWithdrawal, fail: ExceedsCredits},
		{id: 44, ts: 104, kind: KindTransfer, n: 2, inline: [2]cellEntry{{acct: 9, delta: 1, value: 3, col: DebitsPosted}, {acct: 0, delta: 1, value: 8, col: CreditsPosted}}},
	}
	val, n := encodeBatch(nil, recs, walMaxBytes)
	require.Equal(t, len(recs), n)
	requireFastDecodersAgree(t, val)
	for i := 4; i < len(val); i++ {
		for _, x := range []byte{1, 0x40, 0x80, 0xff} {
			v := append([]byte(nil), val...)
			v[i] ^= x
			requireFastDecodersAgree(t, sealRecord(v[4:]))
		}
	}
}
