package ledger

import (
	"context"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
)

// model is an independent re-statement of the ledger's rules: a map of
// accounts, big-integer arithmetic instead of overflow checks, a plain map
// for idempotency. It knows nothing of slots or cells.
type model struct {
	accts       map[uint64]*mAcct
	maxAccounts int
	firstUse    map[uint64]uint64 // UserRef -> id of the last non-duplicate use
	window      uint64
	maxEntries  int
}

type mAcct struct {
	id       uint64
	ledger   uint32
	code     uint16
	flags    AccountFlags
	userData [2]uint64
	col      [numColumns]uint64
}

func newModel(maxAccounts int, window uint64) *model {
	return &model{accts: map[uint64]*mAcct{SystemAccount: {}}, maxAccounts: maxAccounts, firstUse: map[uint64]uint64{},
		window: window, maxEntries: DefaultMaxEntries}
}

type outcome struct {
	fail    FailReason
	dupOf   uint64
	entries []Entry
}

var maxCol = new(big.Int).SetUint64(math.MaxInt64)

// over reports whether the sum of vs exceeds limit.
func over(limit uint64, vs ...uint64) bool {
	s := new(big.Int)
	for _, v := range vs {
		s.Add(s, new(big.Int).SetUint64(v))
	}
	return s.Cmp(new(big.Int).SetUint64(limit)) > 0
}

func (m *model) apply(id uint64, op Op) outcome {
	var ref uint64
	switch o := op.(type) {
	case CreateAccount:
		ref = o.UserRef
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
	case CreateAccount:
		return outcome{fail: m.create(o)}
	case Deposit:
		return m.post(SystemAccount, o.Account, o.Amount)
	case Withdrawal:
		return m.post(o.Account, SystemAccount, o.Amount)
	case Transfer:
		return m.post(o.From, o.To, o.Amount)
	case Composite:
		return m.composite(o)
	}
	panic("unreachable")
}

func (m *model) create(o CreateAccount) FailReason {
	if a, ok := m.accts[o.ID]; ok {
		switch {
		case a.flags != o.Flags:
			return ExistsWithDifferentFlags
		case a.userData != o.UserData:
			return ExistsWithDifferentUserData
		case a.ledger != o.Ledger:
			return ExistsWithDifferentLedger
		case a.code != o.Code:
			return ExistsWithDifferentCode
		}
		return Exists
	}
	if len(m.accts) == m.maxAccounts {
		return AccountsLimitReached
	}
	m.accts[o.ID] = &mAcct{id: o.ID, ledger: o.Ledger, code: o.Code, flags: o.Flags, userData: o.UserData}
	return OK
}

func (m *model) post(from, to, amt uint64) outcome {
	d, c := m.accts[from], m.accts[to]
	switch {
	case d == nil || c == nil:
		return outcome{fail: AccountNotFound}
	case d.flags&Closed != 0:
		return outcome{fail: DebitAccountAlreadyClosed}
	case c.flags&Closed != 0:
		return outcome{fail: CreditAccountAlreadyClosed}
	case from != SystemAccount && to != SystemAccount && d.ledger != c.ledger:
		return outcome{fail: AccountsMustHaveSameLedger}
	case over(math.MaxInt64, d.col[DebitsPosted], amt):
		return outcome{fail: OverflowsDebitsPosted}
	case over(math.MaxInt64, c.col[CreditsPosted], amt):
		return outcome{fail: OverflowsCreditsPosted}
	case d.flags&DebitsMustNotExceedCredits != 0 && over(d.col[CreditsPosted], d.col[DebitsPosted], d.col[DebitsPending], amt):
		return outcome{fail: ExceedsCredits}
	case c.flags&CreditsMustNotExceedDebits != 0 && over(c.col[DebitsPosted], c.col[CreditsPosted], c.col[CreditsPending], amt):
		return outcome{fail: ExceedsDebits}
	}
	d.col[DebitsPosted] += amt
	c.col[CreditsPosted] += amt
	return outcome{entries: []Entry{
		{Account: from, Column: DebitsPosted, Delta: int64(amt), Value: int64(d.col[DebitsPosted])},
		{Account: to, Column: CreditsPosted, Delta: int64(amt), Value: int64(c.col[CreditsPosted])},
	}}
}

func (m *model) composite(o Composite) outcome {
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
	work := map[uint64]*mAcct{} // copies, changed leg by leg
	var ledger uint32
	var entries []Entry
	for _, l := range o.Legs {
		a := work[l.Account]
		if a == nil {
			orig := m.accts[l.Account]
			if orig == nil {
				return outcome{fail: AccountNotFound}
			}
			cp := *orig
			a = &cp
			work[l.Account] = a
		}
		if a.flags&Closed != 0 {
			if l.Delta < 0 {
				return outcome{fail: DebitAccountAlreadyClosed}
			}
			return outcome{fail: CreditAccountAlreadyClosed}
		}
		if l.Account != SystemAccount {
			if ledger == 0 {
				ledger = a.ledger
			} else if a.ledger != ledger {
				return outcome{fail: AccountsMustHaveSameLedger}
			}
		}
		amt := new(big.Int).Abs(big.NewInt(l.Delta))
		col := CreditsPosted
		if l.Delta < 0 {
			col = DebitsPosted
		}
		nv := new(big.Int).Add(new(big.Int).SetUint64(a.col[col]), amt)
		if nv.Cmp(maxCol) > 0 {
			if col == DebitsPosted {
				return outcome{fail: OverflowsDebitsPosted}
			}
			return outcome{fail: OverflowsCreditsPosted}
		}
		a.col[col] = nv.Uint64()
		entries = append(entries, Entry{Account: l.Account, Column: col, Delta: amt.Int64(), Value: nv.Int64()})
		if l.Account == SystemAccount {
			continue
		}
		switch {
		case o.Flags&NoNegative != 0 && a.col[DebitsPosted] > a.col[CreditsPosted]:
			return outcome{fail: ExceedsCredits}
		case col == DebitsPosted && a.flags&DebitsMustNotExceedCredits != 0 && over(a.col[CreditsPosted], a.col[DebitsPosted], a.col[DebitsPending]):
			return outcome{fail: ExceedsCredits}
		case col == CreditsPosted && a.flags&CreditsMustNotExceedDebits != 0 && over(a.col[DebitsPosted], a.col[CreditsPosted], a.col[CreditsPending]):
			return outcome{fail: ExceedsDebits}
		}
	}
	for id, a := range work {
		m.accts[id] = a
	}
	return outcome{entries: entries}
}

// linkedOf reports whether op is linked.
func linkedOf(op Op) bool {
	switch o := op.(type) {
	case CreateAccount:
		return o.Linked
	case Deposit:
		return o.Linked
	case Withdrawal:
		return o.Linked
	case Transfer:
		return o.Linked
	case Composite:
		return o.Linked
	}
	return false
}

func withLinked(op Op) Op {
	switch o := op.(type) {
	case CreateAccount:
		o.Linked = true
		return o
	case Deposit:
		o.Linked = true
		return o
	case Withdrawal:
		o.Linked = true
		return o
	case Transfer:
		o.Linked = true
		return o
	case Composite:
		o.Linked = true
		return o
	}
	return op
}

// applyBatch applies one SubmitBatch whose first op is tx first: linked
// chains all or nothing (a copy of the accounts restored when a member
// fails; the UserRefs of the members evaluated stay remembered), an open
// chain at the end failing whole unevaluated.
func (m *model) applyBatch(first uint64, ops []Op) []outcome {
	out := make([]outcome, len(ops))
	for i := 0; i < len(ops); {
		end := i
		for end < len(ops) && linkedOf(ops[end]) {
			end++
		}
		if end == len(ops) { // open: every member fails, none evaluated
			for j := i; j < end; j++ {
				out[j] = outcome{fail: LinkedEventChainOpen}
				m.remember(first+uint64(j), ops[j])
			}
			break
		}
		if end == i { // not in a chain
			out[i] = m.apply(first+uint64(i), ops[i])
			i++
			continue
		}
		saved := make(map[uint64]*mAcct, len(m.accts))
		for id, a := range m.accts {
			cp := *a
			saved[id] = &cp
		}
		failed := -1
		for j := i; j <= end; j++ {
			out[j] = m.apply(first+uint64(j), ops[j])
			if out[j].fail != OK {
				failed = j
				break
			}
		}
		if failed >= 0 {
			m.accts = saved
			for j := i; j <= end; j++ {
				if j != failed {
					out[j] = outcome{fail: LinkedEventFailed}
				}
				if j > failed {
					m.remember(first+uint64(j), ops[j])
				}
			}
		}
		i = end + 1
	}
	return out
}

// remember records the UserRef of a chain member never evaluated: it
// counts like any transaction that is not a duplicate.
func (m *model) remember(id uint64, op Op) {
	var ref uint64
	switch o := op.(type) {
	case CreateAccount:
		ref = o.UserRef
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
		m.firstUse[ref] = id
	}
}

// opGen makes random ops over a pool of sparse account ids, only some of
// which get created, in two ledgers.
type opGen struct {
	rng  *rand.Rand
	pool []uint64
}

func newOpGen(rng *rand.Rand, n int) *opGen {
	g := &opGen{rng: rng}
	for range n {
		g.pool = append(g.pool, 1+rng.Uint64()>>uint(rng.IntN(60)))
	}
	return g
}

func (g *opGen) acct() uint64 { return g.pool[g.rng.IntN(len(g.pool))] }

func (g *opGen) op() Op {
	rng := g.rng
	amount := func(huge bool) uint64 {
		if huge && rng.IntN(60) == 0 {
			return math.MaxInt64 - rng.Uint64N(1000) // provoke the overflows
		}
		return 1 + rng.Uint64N(1000)
	}
	var ref uint64
	if rng.IntN(4) == 0 {
		ref = 1 + rng.Uint64N(3000)
	}
	switch k := rng.IntN(20); {
	case k < 3:
		flags := []AccountFlags{0, DebitsMustNotExceedCredits, CreditsMustNotExceedDebits, History | DebitsMustNotExceedCredits, 0, Closed}[rng.IntN(6)]
		return CreateAccount{ID: g.acct(), Ledger: 1 + uint32(rng.IntN(2)), Code: uint16(rng.IntN(2)), Flags: flags,
			UserData: [2]uint64{0, uint64(rng.IntN(2))}, UserRef: ref}
	case k < 8:
		return Deposit{Account: g.acct(), Amount: amount(false), UserRef: ref}
	case k < 11:
		return Withdrawal{Account: g.acct(), Amount: amount(false), UserRef: ref}
	case k < 17:
		from, to := g.acct(), g.acct()
		if from == to {
			return Deposit{Account: to, Amount: amount(false), UserRef: ref}
		}
		return Transfer{From: from, To: to, Amount: amount(true), UserRef: ref}
	default:
		n := 2 + rng.IntN(18)
		legs := make([]Leg, n)
		var sum int64
		for i := range legs[:n-1] {
			d := int64(rng.Uint64N(2001)) - 1000
			if d == 0 {
				d = 1
			}
			a := g.acct()
			if rng.IntN(4) == 0 {
				a = SystemAccount
			}
			legs[i] = Leg{Account: a, Delta: d}
			sum += d
		}
		last := -sum
		if rng.IntN(10) == 0 || last == 0 {
			last = sum + 1 // does not net to zero
			if last == 0 {
				last = 1
			}
		}
		legs[n-1] = Leg{Account: g.acct(), Delta: last}
		var flags CompositeFlags
		if rng.IntN(2) == 0 {
			flags = NoNegative
		}
		return Composite{Legs: legs, Flags: flags, UserRef: ref}
	}
}

// TestModelRandomOps runs random batches of every op through the ledger
// and the model, and compares every result (from the WAL) and every
// account's columns; between rounds the ledger is closed and reopened, or
// crashed (a crash clone of its in-memory filesystem taken once the round
// is committed, which must recover to exactly the model's state). Refs are
// remembered by the in-memory window alone and by the durable index (its
// count limit equal to the window, so that the model's rule is the same).
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
	const maxAccounts = 48
	rounds, perRound := 8, 12_000
	if testing.Short() {
		rounds, perRound = 4, 5_000
	}
	mem := vfs.NewCrashableMem()
	cfg.Dir, cfg.FS, cfg.MaxAccounts, cfg.SnapshotEvery, cfg.RingSize, cfg.WALSegmentSize = "model", mem, maxAccounts, 7_000, 4096, 1<<20
	l, err := Open(cfg)
	require.NoError(t, err)
	defer func() { l.Close() }()

	rng := rand.New(rand.NewPCG(1, 2))
	gen := newOpGen(rng, 64) // more ids than fit: accounts_limit_reached
	m := newModel(maxAccounts, window)
	want := map[uint64]outcome{}
	fails := map[FailReason]int{}
	next := uint64(1)
	batch := make([]Op, 0, 512)
	// A prelude that reaches the overflow edges for certain; the random
	// batches reach them only by chance.
	const pa, pb, pc = 1<<62 + 1, 1<<62 + 2, 1<<62 + 3
	prelude := []Op{CreateAccount{ID: pa, Ledger: 1}, CreateAccount{ID: pb, Ledger: 1}, CreateAccount{ID: pc, Ledger: 1},
		Transfer{From: pa, To: pb, Amount: math.MaxInt64}, Transfer{From: pc, To: pb, Amount: 1}, Transfer{From: pa, To: pc, Amount: 1},
		Transfer{From: pb, To: pc, Amount: math.MaxInt64}, Transfer{From: pb, To: pa, Amount: 1}}
	_, _, err = l.SubmitBatch(prelude)
	require.NoError(t, err)
	for _, o := range m.applyBatch(next, prelude) {
		want[next] = o
		next++
	}
	require.Equal(t, []FailReason{OverflowsCreditsPosted, OverflowsDebitsPosted, OK, OverflowsDebitsPosted},
		[]FailReason{want[5].fail, want[6].fail, want[7].fail, want[8].fail}, "the model's edges")
	for round := range rounds {
		start := next
		end := next + uint64(perRound)
		for next < end {
			batch = batch[:0]
			for k := 1 + rng.IntN(cap(batch)); k > 0 && next+uint64(len(batch)) < end; k-- {
				op := gen.op()
				if rng.IntN(8) == 0 { // chains of a few ops, some left open at the end
					op = withLinked(op)
				}
				batch = append(batch, op)
			}
			first, last, err := l.SubmitBatch(batch)
			require.NoError(t, err)
			require.Equal(t, TxID(next), first)
			require.Equal(t, TxID(next+uint64(len(batch))-1), last)
			for _, o := range m.applyBatch(next, batch) {
				want[next] = o
				next++
			}
		}
		require.NoError(t, l.Wait(context.Background(), TxID(next-1), Snapshot))
		from := start
		if round == 0 {
			from = 1 // the prelude too
		}
		checkModel(t, l, m, want, fails, from)

		if round%2 == 0 {
			require.NoError(t, l.Close())
		} else {
			crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rand.New(rand.NewPCG(uint64(round), 9))})
			require.NoError(t, l.Close())
			mem = crashed
			cfg.FS = mem
		}
		l, err = Open(cfg)
		require.NoError(t, err)
		x, err := l.Indexes()
		require.NoError(t, err)
		require.Equal(t, TxID(next-1), x.Committed, "round %d: every committed transaction recovered", round)
		checkModel(t, l, m, want, nil, next)
	}
	for _, f := range []FailReason{OK, ExceedsCredits, ExceedsDebits, AccountNotFound, ZeroSumViolation, EntryLimitExceeded,
		OverflowsDebitsPosted, OverflowsCreditsPosted, Duplicate, Exists, ExistsWithDifferentFlags, ExistsWithDifferentUserData,
		ExistsWithDifferentLedger, ExistsWithDifferentCode, AccountsLimitReached, AccountsMustHaveSameLedger,
		LinkedEventFailed, LinkedEventChainOpen, DebitAccountAlreadyClosed, CreditAccountAlreadyClosed} {
		require.Positive(t, fails[f], "no transaction failed with %v", f)
	}
	t.Logf("fail reasons: %v", fails)
}

// checkModel compares the ledger's results from tx from on (counting their
// fail reasons into fails, if not nil) and every account's columns with
// the model.
func checkModel(t *testing.T, l *Ledger, m *model, want map[uint64]outcome, fails map[FailReason]int, from uint64) {
	t.Helper()
	require.NoError(t, scanLedgerWAL(l, from, func(tx *walTx) error {
		w := want[tx.id]
		got := tx.result()
		require.Equal(t, w.fail, got.Fail, "tx %d", tx.id)
		require.Equal(t, TxID(w.dupOf), got.DupOf, "tx %d", tx.id)
		require.Equal(t, w.entries, got.Entries, "tx %d", tx.id)
		if fails != nil {
			fails[got.Fail]++
		}
		return nil
	}))
	var debits, credits uint64
	for id, a := range m.accts {
		got, err := l.Lookup(id)
		require.NoError(t, err)
		require.Equal(t, Account{ID: id, Ledger: a.ledger, Code: a.code, Flags: a.flags, UserData: a.userData,
			DebitsPosted: a.col[DebitsPosted], CreditsPosted: a.col[CreditsPosted],
			DebitsPending: a.col[DebitsPending], CreditsPending: a.col[CreditsPending]}, got)
		debits += a.col[DebitsPosted]
		credits += a.col[CreditsPosted]
	}
	require.Equal(t, debits, credits)
	for _, id := range []uint64{7, 1 << 63} {
		if m.accts[id] == nil {
			_, err := l.Lookup(id)
			require.ErrorIs(t, err, ErrAccountNotFound)
		}
	}
}
