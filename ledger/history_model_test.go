package ledger

import (
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

var historySeed = flag.Uint64("ledger.history-seed", 0, "seed of TestHistoryModel (0: the clock)")

// histModel is what the indexes must answer, computed by scanning every
// transaction's Result in id order: no key, no block, no posting.
type histModel struct {
	txs   []Result // txs[i] has id i+1
	accts map[uint64]*histAcct
	order []uint64 // account ids in creation order
}

type histAcct struct {
	meta      Account
	createdTx TxID
	createdTs int64
	cols      [numColumns]uint64
	history   []histEntry // transactions touching it, with its columns after
}

func newHistModel(txs []Result) *histModel {
	m := &histModel{accts: map[uint64]*histAcct{SystemAccount: {}}}
	for i := range txs {
		m.add(txs[i])
	}
	return m
}

func (m *histModel) add(r Result) {
	if uint64(r.ID) != uint64(len(m.txs))+1 {
		panic("results out of order")
	}
	m.txs = append(m.txs, r)
	var touched []uint64
	side := map[uint64]byte{}
	move := func(account uint64, col Column, value uint64) {
		m.accts[account].cols[col] = value
		if !slices.Contains(touched, account) {
			touched = append(touched, account)
		}
		if col == DebitsPosted || col == DebitsPending {
			side[account] |= sideDebit
		} else {
			side[account] |= sideCredit
		}
	}
	// The expiry scan's releases come first, even before a failed
	// transaction: each expired pending transfer's hold leaves the
	// pending columns it entered.
	for _, id := range r.Expired {
		for _, e := range m.txs[id-1].Entries {
			if (e.Column == DebitsPending || e.Column == CreditsPending) && e.Delta > 0 {
				move(e.Account, e.Column, m.accts[e.Account].cols[e.Column]-uint64(e.Delta))
			}
		}
	}
	if r.Fail == OK && r.Kind == KindCreateAccount {
		m.accts[r.Account.ID] = &histAcct{meta: *r.Account, createdTx: r.ID, createdTs: r.Timestamp}
		m.order = append(m.order, r.Account.ID)
	}
	for _, e := range r.Entries {
		move(e.Account, e.Column, uint64(e.Value))
	}
	for _, id := range touched {
		a := m.accts[id]
		a.history = append(a.history, histEntry{AccountTransfer{Result: r, Balance: AccountBalance{TxID: r.ID, Timestamp: r.Timestamp,
			DebitsPosted: a.cols[DebitsPosted], CreditsPosted: a.cols[CreditsPosted],
			DebitsPending: a.cols[DebitsPending], CreditsPending: a.cols[CreditsPending]}}, side[id]})
	}
}

// histEntry is a transaction in an account's history, with how it moved
// the account.
type histEntry struct {
	AccountTransfer
	side byte
}

func (m *histModel) ledgerOf(r *Result) uint32 {
	if r.Kind == KindTransfer {
		return r.Ledger
	}
	for _, e := range r.Entries {
		if e.Account != SystemAccount {
			return m.accts[e.Account].meta.Ledger
		}
	}
	return 0
}

func (m *histModel) accountTransfers(account uint64, f AccountFilter) []AccountTransfer {
	var out []AccountTransfer
	for _, h := range m.accts[account].history {
		if (h.side&sideDebit == 0 || !f.Debits) && (h.side&sideCredit == 0 || !f.Credits) {
			continue
		}
		if inTime(h.Timestamp, f.MinTimestamp, f.MaxTimestamp) && hasFields(&h.Result, f.Code, f.UserData) {
			out = append(out, h.AccountTransfer)
		}
	}
	if f.Reverse {
		slices.Reverse(out)
	}
	return out
}

func (m *histModel) queryTransfers(f TransferFilter) []Result {
	var out []Result
	for i := range m.txs {
		r := &m.txs[i]
		if r.Fail != OK || r.Kind == KindCreateAccount || !inTime(r.Timestamp, f.MinTimestamp, f.MaxTimestamp) {
			continue
		}
		if f.Ledger != 0 && m.ledgerOf(r) != f.Ledger || !hasFields(r, f.Code, f.UserData) {
			continue
		}
		out = append(out, *r)
	}
	if f.Reverse {
		slices.Reverse(out)
	}
	return out
}

// hasFields reports whether r has code and user data (0: any; only
// transfers have them).
func hasFields(r *Result, code uint16, userData uint64) bool {
	if code == 0 && userData == 0 {
		return true
	}
	return r.Kind == KindTransfer && r.Fail != Duplicate && (code == 0 || r.Code == code) && (userData == 0 || r.UserData == userData)
}

func (m *histModel) queryAccounts(q AccountQuery) []Account {
	var out []Account
	for _, id := range m.order {
		a := m.accts[id]
		switch {
		case q.Ledger != 0 && a.meta.Ledger != q.Ledger,
			q.Code != 0 && a.meta.Code != q.Code,
			q.UserData != [2]uint64{} && a.meta.UserData != q.UserData,
			!inTime(a.createdTs, q.MinTimestamp, q.MaxTimestamp):
			continue
		}
		acc := a.meta
		acc.DebitsPosted, acc.CreditsPosted, acc.DebitsPending, acc.CreditsPending = a.cols[0], a.cols[1], a.cols[2], a.cols[3]
		out = append(out, acc)
	}
	if q.Reverse {
		slices.Reverse(out)
	}
	return out
}

// balanceAt is account's columns after tx at.
func (m *histModel) balanceAt(account uint64, at TxID) AccountBalance {
	var b AccountBalance
	for _, h := range m.accts[account].history {
		if h.ID > at {
			break
		}
		b = h.Balance
	}
	return b
}

// pages walks every page of a read with the given limit.
func pages[T any](t *testing.T, limit int, read func(c Cursor) ([]T, Cursor, ReadInfo)) []T {
	t.Helper()
	var all []T
	var c Cursor
	for n := 0; ; n++ {
		require.Less(t, n, 100_000, "no end of pages")
		items, next, _ := read(c)
		require.LessOrEqual(t, len(items), limit)
		all = append(all, items...)
		if next == "" {
			require.Less(t, len(items), limit+1)
			return all
		}
		require.Len(t, items, limit, "a cursor after a short page")
		c = next
	}
}

// histWorkload is random ops over the model's accounts: deposits,
// withdrawals, transfers, composites, some failing, some duplicates.
func histWorkload(rng *rand.Rand, n int, accts []uint64, ref *uint64, pending ...TxID) []Op {
	ops := make([]Op, n)
	pick := func() uint64 { return accts[rng.IntN(len(accts))] }
	for i := range ops {
		*ref++
		r := *ref
		if rng.IntN(10) == 0 && r > 3 {
			r -= 3 // a duplicate, mostly
		}
		switch k := rng.IntN(10); {
		case k < 3:
			ops[i] = Deposit{Account: pick(), Amount: 1 + rng.Uint64N(1000), UserRef: r}
		case k < 4:
			ops[i] = Withdrawal{Account: pick(), Amount: 1 + rng.Uint64N(500), UserRef: r}
		case k < 8:
			a, b := pick(), pick()
			if a == b {
				ops[i] = Deposit{Account: a, Amount: 5}
				continue
			}
			t := Transfer{From: a, To: b, Amount: 1 + rng.Uint64N(300), UserRef: r, Code: uint16(rng.IntN(4)), UserData: rng.Uint64N(6)}
			switch k := rng.IntN(8); {
			case k == 0:
				t.Flags = Pending
				if rng.IntN(2) == 0 {
					t.Timeout = 1 // expires a second after it
				}
			case k == 1 && len(pending) > 0:
				t.Flags, t.PendingID, t.Amount = PostPendingTransfer, pending[rng.IntN(len(pending))], 0
				t.From, t.To, t.Ledger = 0, 0, 0
			case k == 2 && len(pending) > 0:
				t.Flags, t.PendingID, t.Amount = VoidPendingTransfer, pending[rng.IntN(len(pending))], 0
				t.From, t.To, t.Ledger = 0, 0, 0
			}
			ops[i] = t
		default:
			a, b, c := pick(), pick(), pick()
			ops[i] = Composite{Legs: []Leg{{Account: a, Delta: -10}, {Account: b, Delta: 4}, {Account: c, Delta: 6}}, UserRef: r}
		}
	}
	return ops
}

// histAccounts creates accounts over two ledgers, every other one with the
// History flag, some with limits (so that transfers fail).
func histAccounts(t *testing.T, l *Ledger, n int) (ids []uint64, results []Result) {
	ops := make([]Op, n)
	for i := range ops {
		id := uint64(100 + 7*i)
		ids = append(ids, id)
		var f AccountFlags
		if i%2 == 0 {
			f |= History
		}
		if i%5 == 4 {
			f |= DebitsMustNotExceedCredits
		}
		ops[i] = CreateAccount{ID: id, Ledger: uint32(1 + i%2), Code: uint16(10 + i%3), Flags: f, UserData: [2]uint64{uint64(i % 4), 9}}
	}
	res, err := l.SubmitBatchAndWait(context.Background(), ops, Committed)
	require.NoError(t, err)
	return ids, res
}

// checkIndex checks every read of l against the model of its transactions.
func checkIndex(t *testing.T, l *Ledger, m *histModel, rng *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	last := TxID(len(m.txs))
	require.NoError(t, l.waitIndexed(ctx, last)) // the index trails Snapshot by up to a block
	minTs, maxTs := m.txs[0].Timestamp, m.txs[len(m.txs)-1].Timestamp
	randTs := func() int64 {
		if rng.IntN(3) == 0 {
			return 0
		}
		return minTs + rng.Int64N(maxTs-minTs+1)
	}
	for _, id := range m.order {
		a := m.accts[id]
		f := AccountFilter{Debits: true, Credits: true, Limit: 1 + rng.IntN(40)}
		_, err := l.AccountTransfers(ctx, id, f)
		if a.meta.Flags&History == 0 {
			require.ErrorIs(t, err, ErrNoHistory)
			continue
		}
		require.NoError(t, err)
		for range 4 {
			f.Debits, f.Credits = true, true
			switch rng.IntN(4) {
			case 0:
				f.Credits = false
			case 1:
				f.Debits = false
			}
			f.MinTimestamp, f.MaxTimestamp = randTs(), randTs()
			if f.MaxTimestamp != 0 && f.MinTimestamp > f.MaxTimestamp {
				f.MinTimestamp, f.MaxTimestamp = f.MaxTimestamp, f.MinTimestamp
			}
			for _, rev := range []bool{false, true} {
				f.Reverse = rev
				want := m.accountTransfers(id, f)
				got := pages(t, f.Limit, func(c Cursor) ([]AccountTransfer, Cursor, ReadInfo) {
					g := f
					g.Cursor = c
					p, err := l.AccountTransfers(ctx, id, g)
					require.NoError(t, err)
					require.Equal(t, last, p.AsOf)
					return p.Transfers, p.Next, p.ReadInfo
				})
				require.Equal(t, ids(want), ids(got), "account %d filter %+v", id, f)
				require.Equal(t, want, got)
				bals := pages(t, f.Limit, func(c Cursor) ([]AccountBalance, Cursor, ReadInfo) {
					g := f
					g.Cursor = c
					p, err := l.AccountBalances(ctx, id, g)
					require.NoError(t, err)
					return p.Balances, p.Next, p.ReadInfo
				})
				require.Len(t, bals, len(want))
				for i := range want {
					require.Equal(t, want[i].Balance, bals[i])
				}
			}
		}
		for range 5 {
			at := TxID(1 + rng.Uint64N(uint64(last)))
			b, info, err := l.BalanceAt(ctx, id, at)
			require.NoError(t, err)
			require.Equal(t, last, info.AsOf)
			require.Equal(t, m.balanceAt(id, at), b, "account %d at %d", id, at)
		}
	}
	for range 6 {
		f := TransferFilter{Limit: 1 + rng.IntN(200), MinTimestamp: randTs(), MaxTimestamp: randTs()}
		if f.MaxTimestamp != 0 && f.MinTimestamp > f.MaxTimestamp {
			f.MinTimestamp, f.MaxTimestamp = f.MaxTimestamp, f.MinTimestamp
		}
		if rng.IntN(2) == 0 {
			f.Ledger = uint32(1 + rng.IntN(3)) // ledger 3 has no account
		}
		if rng.IntN(3) == 0 {
			f.Code = uint16(rng.IntN(4))
		}
		if rng.IntN(3) == 0 {
			f.UserData = rng.Uint64N(6)
		}
		for _, rev := range []bool{false, true} {
			f.Reverse = rev
			want := m.queryTransfers(f)
			got := pages(t, f.Limit, func(c Cursor) ([]Result, Cursor, ReadInfo) {
				g := f
				g.Cursor = c
				p, err := l.QueryTransfers(ctx, g)
				require.NoError(t, err)
				return p.Transfers, p.Next, p.ReadInfo
			})
			require.Equal(t, want, got, "filter %+v", f)
		}
	}
	for range 6 {
		q := AccountQuery{Limit: 1 + rng.IntN(10)}
		if rng.IntN(2) == 0 {
			q.Ledger = uint32(1 + rng.IntN(2))
		}
		if rng.IntN(2) == 0 {
			q.Code = uint16(10 + rng.IntN(3))
		}
		if rng.IntN(3) == 0 {
			q.UserData = [2]uint64{uint64(rng.IntN(4)), 9}
		}
		q.MinTimestamp = randTs()
		for _, rev := range []bool{false, true} {
			q.Reverse = rev
			want := m.queryAccounts(q)
			got := pages(t, q.Limit, func(c Cursor) ([]Account, Cursor, ReadInfo) {
				g := q
				g.Cursor = c
				p, err := l.QueryAccounts(ctx, g)
				require.NoError(t, err)
				return p.Accounts, p.Next, p.ReadInfo
			})
			require.Equal(t, want, got, "query %+v", q)
		}
	}
	lookup := []TxID{0, last + 1, last}
	for range 50 {
		lookup = append(lookup, TxID(1+rng.Uint64N(uint64(last))))
	}
	got, info, err := l.LookupTransfers(ctx, lookup, 0)
	require.NoError(t, err)
	require.Equal(t, last, info.AsOf)
	for i, id := range lookup {
		if id == 0 || id > last {
			require.Nil(t, got[i])
			continue
		}
		require.NotNil(t, got[i], "tx %d", id)
		require.Equal(t, m.txs[id-1], *got[i])
	}
}

func ids[T interface{ txID() TxID }](xs []T) []TxID {
	out := make([]TxID, len(xs))
	for i := range xs {
		out[i] = xs[i].txID()
	}
	return out
}

func (a AccountTransfer) txID() TxID { return a.ID }

// pendingIDs are the pending transfers of rs.
func pendingIDs(rs []Result) []TxID {
	var ids []TxID
	for _, r := range rs {
		if r.Kind == KindTransfer && r.Fail == OK && r.Flags&Pending != 0 {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// TestHistoryModel runs random workloads and checks every read against the
// model after each round, after crashes (a power cut at a random instant:
// the index's unsynced batches partly lost, the ledger reopened on what is
// left catches up from the WAL) and after a clean reopen.
func TestHistoryModel(t *testing.T) {
	seed := *historySeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-ledger.history-seed)", seed)
	rng := rand.New(rand.NewPCG(21, seed))
	mem := vfs.NewCrashableMem()
	// A clock 300 ms ahead at every reading: pending transfers with a
	// second's timeout expire within the workload.
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	cfg := Config{Dir: "/h", FS: mem, MaxAccounts: 64, RingSize: 256, SnapshotEvery: 300, WALSegmentSize: 256 << 10, Index: true,
		now: func() int64 { return clock.Add(int64(300 * time.Millisecond)) }}
	l, err := Open(cfg)
	require.NoError(t, err)
	accts, res := histAccounts(t, l, 16)
	var all []Result
	all = append(all, res...)
	ctx := context.Background()
	ref := uint64(0)
	type crash struct {
		fs   *vfs.MemFS
		upto int // results known when cloned: the clone holds at least these
	}
	var crashes []crash
	for round := range 12 {
		for range 1 + rng.IntN(6) {
			ops := histWorkload(rng, 1+rng.IntN(60), accts, &ref, pendingIDs(all)...)
			r, err := l.SubmitBatchAndWait(ctx, ops, Committed)
			require.NoError(t, err)
			all = append(all, r...)
		}
		if round%3 == 1 {
			// A power cut while a batch runs through the pipeline.
			ops := histWorkload(rng, 1+rng.IntN(200), accts, &ref)
			done := make(chan []Result)
			go func() {
				r, err := l.SubmitBatchAndWait(ctx, ops, Committed)
				if err != nil {
					panic(err)
				}
				done <- r
			}()
			for range rng.IntN(2000) {
				runtime.Gosched()
			}
			crashes = append(crashes, crash{fs: mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng}), upto: len(all)})
			all = append(all, <-done...)
		}
		checkIndex(t, l, newHistModel(all), rng)
	}
	// The workload reached the pending columns: holds, posts and voids
	// applied (the history records carry all four columns).
	var held, resolved int
	for _, r := range all {
		if r.Kind == KindTransfer && r.Fail == OK && r.Flags&Pending != 0 {
			held++
		}
		if r.Kind == KindTransfer && r.Fail == OK && r.Flags&(PostPendingTransfer|VoidPendingTransfer) != 0 {
			resolved++
		}
	}
	var expired int
	for _, r := range all {
		expired += len(r.Expired)
	}
	require.NotZero(t, held)
	require.NotZero(t, resolved)
	require.NotZero(t, expired, "no pending transfer expired")
	require.NoError(t, l.Close())
	l, err = Open(cfg)
	require.NoError(t, err)
	checkIndex(t, l, newHistModel(all), rng)
	require.NoError(t, l.Close())

	for _, c := range crashes {
		cc := cfg
		cc.FS = c.fs
		l, err := Open(cc)
		require.NoError(t, err)
		x, err := l.Indexes()
		require.NoError(t, err)
		require.GreaterOrEqual(t, int(x.Committed), c.upto)
		st := l.IndexStats()
		t.Logf("crash clone at %d results: recovered %d, index caught up %d txs, cut %d", c.upto, x.Committed, st.CaughtUp, st.Cut)
		checkIndex(t, l, newHistModel(all[:x.Committed]), rng)
		require.NoError(t, l.Close())
	}
}

// TestHistoryIndexCut damages the WAL's last batches: Open drops them as a
// torn tail, or refuses and ledger recover cuts the log before them. The
// index held them; Open cuts them from it and it answers as of the cut.
func TestHistoryIndexCut(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 7))
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 64, SnapshotEvery: -1, WALMaxBatch: 16, Index: true}
	l, err := Open(cfg)
	require.NoError(t, err)
	accts, all := histAccounts(t, l, 16)
	ref := uint64(0)
	for range 20 {
		r, err := l.SubmitBatchAndWait(context.Background(), histWorkload(rng, 40, accts, &ref), Committed)
		require.NoError(t, err)
		all = append(all, r...)
	}
	require.NoError(t, l.Close())
	bs := walBatches(t, cfg.Dir)
	victim := bs[len(bs)-3]
	flipByte(t, victim.file, victim.off+19+int64(victim.size)/2)
	l, err = Open(cfg)
	var ce *CorruptError
	if errors.As(err, &ce) {
		_, err = truncateDir(nil, cfg.Dir, uint64(ce.FirstTx)-1)
		require.NoError(t, err)
		l, err = Open(cfg)
	}
	require.NoError(t, err)
	x, err := l.Indexes()
	require.NoError(t, err)
	require.Less(t, uint64(x.Committed), victim.first)
	require.Equal(t, uint64(len(all))-uint64(x.Committed), l.IndexStats().Cut)
	checkIndex(t, l, newHistModel(all[:x.Committed]), rng)
	// New transactions take the ids cut: the index holds them, not the old.
	r, err := l.SubmitBatchAndWait(context.Background(), histWorkload(rng, 100, accts, &ref), Committed)
	require.NoError(t, err)
	checkIndex(t, l, newHistModel(append(all[:x.Committed:x.Committed], r...)), rng)
	require.NoError(t, l.Close())
}

// TestHistoryIndexDamage: a damaged index state costs a rebuild from the
// WAL, never the ledger; a damaged block is a CorruptError to the read
// that meets it, never a wrong answer.
func TestHistoryIndexDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 9))
	cfg := Config{Dir: t.TempDir(), MaxAccounts: 64, SnapshotEvery: 200, Index: true}
	l, err := Open(cfg)
	require.NoError(t, err)
	accts, all := histAccounts(t, l, 16)
	ref := uint64(0)
	for range 10 {
		r, err := l.SubmitBatchAndWait(context.Background(), histWorkload(rng, 50, accts, &ref), Committed)
		require.NoError(t, err)
		all = append(all, r...)
	}
	require.NoError(t, l.Close())

	setIndexValue(t, cfg.Dir, indexStateKey, func(v []byte) []byte { v[6] ^= 1; return v })
	l, err = Open(cfg)
	require.NoError(t, err)
	require.Equal(t, uint64(len(all)), l.IndexStats().CaughtUp, "rebuilt from the first transaction")
	checkIndex(t, l, newHistModel(all), rng)
	require.NoError(t, l.Close())

	setIndexValue(t, cfg.Dir, idKey(prefixBlock, 1), func(v []byte) []byte { v[len(v)/2] ^= 1; return v })
	l, err = Open(cfg)
	require.NoError(t, err)
	_, _, err = l.LookupTransfers(context.Background(), []TxID{1}, 0)
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = l.QueryTransfers(context.Background(), TransferFilter{Limit: 10})
	require.ErrorIs(t, err, ErrCorrupt)
	require.NoError(t, l.Close())
}

// TestHistoryIndexOffThenOn: an Open with the index off neither writes nor
// serves it (the index of the directory stays as it was); the next Open with it on catches up from the WAL what that run wrote, or,
// if retention removed those segments meanwhile, restarts the index at
// the recovered state: every History account's columns as an opening
// record, its history from there on.
func TestHistoryIndexOffThenOn(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 11))
	ctx := context.Background()
	for _, prune := range []bool{false, true} {
		cfg := Config{Dir: t.TempDir(), MaxAccounts: 64, WALSegmentSize: 256 << 10, SnapshotEvery: -1, Index: true}
		if prune {
			cfg.SnapshotEvery, cfg.WALRetention = 200, 1
		}
		l, err := Open(cfg)
		require.NoError(t, err)
		accts, all := histAccounts(t, l, 16)
		ref := uint64(0)
		all = append(all, histMore(t, l, rng, accts, &ref, 5, 60)...)
		require.NoError(t, l.Close())
		before := indexKeys(t, cfg.Dir)
		require.NotEmpty(t, before)
		off := cfg
		off.Index = false
		l, err = Open(off)
		require.NoError(t, err)
		mark := TxID(len(all))
		if prune {
			all = append(all, histMore(t, l, rng, accts, &ref, 200, 60)...) // several segments: retention removes the oldest
		} else {
			all = append(all, histMore(t, l, rng, accts, &ref, 40, 60)...)
		}
		_, err = l.AccountTransfers(ctx, accts[0], AccountFilter{Debits: true, Limit: 10})
		require.ErrorIs(t, err, ErrIndexOff)
		_, err = l.QueryTransfers(ctx, TransferFilter{Limit: 10})
		require.ErrorIs(t, err, ErrIndexOff)
		require.NoError(t, l.Close())
		require.Equal(t, before, indexKeys(t, cfg.Dir), "the run without the index changed it")

		l, err = Open(cfg)
		require.NoError(t, err)
		st := l.IndexStats()
		require.Equal(t, prune, st.Restarted, "stats %+v", st)
		if !prune {
			require.Equal(t, uint64(len(all))-uint64(mark), st.CaughtUp)
			checkIndex(t, l, newHistModel(all), rng)
		} else {
			// The history starts after the restart: an opening record
			// carries every History account's columns, so a balance as of
			// any later transaction is exact.
			all = append(all, histMore(t, l, rng, accts, &ref, 3, 60)...)
			m := newHistModel(all)
			last := TxID(len(all))
			require.NoError(t, l.waitIndexed(ctx, last))
			for _, id := range m.order {
				if m.accts[id].meta.Flags&History == 0 {
					continue
				}
				b, _, err := l.BalanceAt(ctx, id, last)
				require.NoError(t, err)
				want := m.balanceAt(id, last)
				want.Timestamp, b.Timestamp = 0, 0
				if want.TxID < TxID(l.recovered.last)+1 {
					want.TxID = TxID(l.recovered.last) // the opening record
				}
				require.Equal(t, want, b, "account %d", id)
			}
		}
		require.NoError(t, l.Close())
	}
}
