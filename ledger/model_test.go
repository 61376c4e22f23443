package ledger

import (
	"context"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// model is an independent re-statement of the ledger's rules: big-integer
// arithmetic instead of overflow checks, a plain map for idempotency.
type model struct {
	bal        []int64
	firstUse   map[uint64]uint64 // UserRef -> id of the last non-duplicate use
	window     uint64
	maxEntries int
}

type outcome struct {
	fail    FailReason
	dupOf   uint64
	entries []Entry
}

var minI64, maxI64 = big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)

func fits(v *big.Int) bool { return v.Cmp(minI64) >= 0 && v.Cmp(maxI64) <= 0 }

func (m *model) apply(id uint64, op Op) outcome {
	var ref uint64
	switch o := op.(type) {
	case Deposit:
		ref = o.UserRef
	case Withdrawal:
		ref = o.UserRef
	case Transfer:
		ref = o.UserRef
	case Composite:
		ref = o.UserRef
	}
	if ref != 0 {
		if orig, ok := m.firstUse[ref]; ok && id-orig <= m.window {
			return outcome{fail: Duplicate, dupOf: orig}
		}
		m.firstUse[ref] = id
	}
	switch o := op.(type) {
	case Deposit:
		return m.legs([]Leg{{0, -int64(o.Amount)}, {o.Account, int64(o.Amount)}}, false, false)
	case Withdrawal:
		return m.legs([]Leg{{o.Account, -int64(o.Amount)}, {0, int64(o.Amount)}}, true, false)
	case Transfer:
		return m.legs([]Leg{{o.From, -int64(o.Amount)}, {o.To, int64(o.Amount)}}, true, false)
	case Composite:
		if len(o.Legs) > m.maxEntries {
			return outcome{fail: EntryLimitExceeded}
		}
		sum := new(big.Int)
		for _, l := range o.Legs {
			sum.Add(sum, big.NewInt(l.Delta))
		}
		if sum.Sign() != 0 {
			return outcome{fail: ZeroSumViolation}
		}
		return m.legs(o.Legs, false, o.Flags&NoNegative != 0)
	}
	panic("unreachable")
}

// legs applies legs in order on a copy. firstNoNeg: the first leg's account
// must not go negative (withdrawal, transfer); allNoNeg: no non-system leg.
func (m *model) legs(legs []Leg, firstNoNeg, allNoNeg bool) outcome {
	work := map[uint64]int64{}
	get := func(a uint64) int64 {
		if v, ok := work[a]; ok {
			return v
		}
		return m.bal[a]
	}
	var entries []Entry
	for i, l := range legs {
		nb := new(big.Int).Add(big.NewInt(get(l.Account)), big.NewInt(l.Delta))
		if (i == 0 && firstNoNeg || allNoNeg && l.Account != 0) && nb.Sign() < 0 {
			return outcome{fail: InsufficientFunds}
		}
		if !fits(nb) {
			return outcome{fail: BalanceOverflow}
		}
		work[l.Account] = nb.Int64()
		entries = append(entries, Entry{l.Account, l.Delta, nb.Int64()})
	}
	for a, v := range work {
		m.bal[a] = v
	}
	return outcome{entries: entries}
}

func randomOp(rng *rand.Rand, accounts uint64) Op {
	acct := func() uint64 { return 1 + rng.Uint64N(accounts-1) }
	amount := func() uint64 {
		if rng.IntN(500) == 0 {
			return math.MaxInt64 - rng.Uint64N(1000) // provoke BalanceOverflow
		}
		return 1 + rng.Uint64N(1000)
	}
	var ref uint64
	if rng.IntN(4) == 0 {
		ref = 1 + rng.Uint64N(3000)
	}
	switch k := rng.IntN(10); {
	case k < 3:
		return Deposit{Account: acct(), Amount: amount(), UserRef: ref}
	case k < 5:
		return Withdrawal{Account: acct(), Amount: amount(), UserRef: ref}
	case k < 8:
		from, to := acct(), acct()
		if from == to {
			to = from%(accounts-1) + 1
		}
		return Transfer{From: from, To: to, Amount: amount(), UserRef: ref}
	default:
		n := 2 + rng.IntN(18)
		legs := make([]Leg, n)
		var sum int64
		for i := range legs[:n-1] {
			d := int64(rng.Uint64N(2001)) - 1000
			if d == 0 {
				d = 1
			}
			legs[i] = Leg{Account: rng.Uint64N(accounts), Delta: d}
			sum += d
		}
		last := -sum
		if rng.IntN(10) == 0 || last == 0 {
			last = sum + 1 // does not net to zero
		}
		legs[n-1] = Leg{Account: rng.Uint64N(accounts), Delta: last}
		var flags CompositeFlags
		if rng.IntN(2) == 0 {
			flags = NoNegative
		}
		return Composite{Legs: legs, Flags: flags, UserRef: ref}
	}
}

// TestModelRandomOps runs random ops against the ledger and a model of its
// rules, with refs remembered by the in-memory window alone and by the
// durable index (its count limit equal to the window, so that the model's
// rule is the same).
func TestModelRandomOps(t *testing.T) {
	const window = 5000
	t.Run("window", func(t *testing.T) {
		testModelRandomOps(t, Config{DedupWindow: window, DedupRetention: -1}, window)
	})
	t.Run("index", func(t *testing.T) {
		testModelRandomOps(t, Config{DedupWindow: window, DedupRetentionTxs: window}, window)
	})
}

func testModelRandomOps(t *testing.T, cfg Config, window uint64) {
	const accounts = 64
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	dir := t.TempDir()
	cfg.Dir, cfg.MaxAccounts, cfg.SnapshotEvery, cfg.RingSize = dir, accounts, 30_000, 4096
	l, err := Open(cfg)
	require.NoError(t, err)
	defer l.Close()

	rng := rand.New(rand.NewPCG(1, 2))
	m := &model{bal: make([]int64, accounts), firstUse: map[uint64]uint64{}, window: window, maxEntries: DefaultMaxEntries}
	want := make([]outcome, n+1)
	batch := make([]Op, 0, 512)
	next := uint64(1)
	for next <= uint64(n) {
		batch = batch[:0]
		for k := 1 + rng.IntN(cap(batch)); k > 0 && next+uint64(len(batch)) <= uint64(n); k-- {
			batch = append(batch, randomOp(rng, accounts))
		}
		if len(batch) == 1 {
			id, err := l.Submit(batch[0])
			require.NoError(t, err)
			require.Equal(t, TxID(next), id)
		} else {
			first, last, err := l.SubmitBatch(batch)
			require.NoError(t, err)
			require.Equal(t, TxID(next), first)
			require.Equal(t, TxID(next+uint64(len(batch))-1), last)
		}
		for _, op := range batch {
			want[next] = m.apply(next, op)
			next++
		}
	}
	require.NoError(t, l.Wait(context.Background(), TxID(n), Snapshot))

	checkBalances := func(l *Ledger) {
		var sum int64
		for a := uint64(0); a < accounts; a++ {
			b, err := l.Balance(a)
			require.NoError(t, err)
			require.Equal(t, m.bal[a], b, "account %d", a)
			sum += b
		}
		require.Zero(t, sum)
	}
	checkBalances(l)

	fails := map[FailReason]int{}
	seen := uint64(0)
	require.NoError(t, scanLedgerWAL(l, 1, func(tx *walTx) error {
		seen++
		require.Equal(t, seen, tx.id)
		w := want[tx.id]
		got := tx.result()
		require.Equal(t, w.fail, got.Fail, "tx %d", tx.id)
		require.Equal(t, TxID(w.dupOf), got.DupOf, "tx %d", tx.id)
		require.Equal(t, w.entries, got.Entries, "tx %d", tx.id)
		fails[got.Fail]++
		return nil
	}))
	require.Equal(t, uint64(n), seen)
	for _, f := range []FailReason{OK, InsufficientFunds, ZeroSumViolation, EntryLimitExceeded, BalanceOverflow, Duplicate} {
		require.Positive(t, fails[f], "no transaction failed with %v", f)
	}
	t.Logf("fail reasons: %v", fails)

	// The same state, and the same dedup decisions, after recovery.
	want1, err := l.Indexes()
	require.NoError(t, err)
	require.NoError(t, l.Close())
	l, err = Open(cfg)
	require.NoError(t, err)
	defer l.Close()
	got1, err := l.Indexes()
	require.NoError(t, err)
	require.Equal(t, want1, got1)
	checkBalances(l)
	for i := 0; i < 2000; i++ {
		op := randomOp(rng, accounts)
		r, err := l.SubmitAndWait(context.Background(), op, Computed)
		require.NoError(t, err)
		w := m.apply(uint64(r.ID), op)
		require.Equal(t, w.fail, r.Fail, "tx %d", r.ID)
		require.Equal(t, TxID(w.dupOf), r.DupOf)
		require.Equal(t, w.entries, r.Entries)
	}
}
