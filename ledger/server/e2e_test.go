package server

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// model is the sequential reference the ledger must agree with.
type model struct{ bal []int64 }

func (m *model) apply(op ledger.Op) ledger.FailReason {
	b := m.bal
	switch o := op.(type) {
	case ledger.Deposit:
		b[o.Account] += int64(o.Amount)
		b[0] -= int64(o.Amount)
	case ledger.Withdrawal:
		if b[o.Account] < int64(o.Amount) {
			return ledger.ExceedsCredits
		}
		b[o.Account] -= int64(o.Amount)
		b[0] += int64(o.Amount)
	case ledger.Transfer:
		if b[o.From] < int64(o.Amount) {
			return ledger.ExceedsCredits
		}
		b[o.From] -= int64(o.Amount)
		b[o.To] += int64(o.Amount)
	case ledger.Composite:
		var sum int64
		for _, l := range o.Legs {
			sum += l.Delta
		}
		if sum != 0 {
			return ledger.ZeroSumViolation
		}
		// Every account but the system account has
		// DebitsMustNotExceedCredits: with or without NoNegative, no leg
		// takes one below zero.
		for _, l := range o.Legs { // legs name distinct accounts
			if l.Account != 0 && b[l.Account]+l.Delta < 0 {
				return ledger.ExceedsCredits
			}
		}
		for _, l := range o.Legs {
			b[l.Account] += l.Delta
		}
	}
	return ledger.OK
}

func randOp(r *rand.Rand) ledger.Op {
	acct := func() uint64 { return 1 + r.Uint64N(testAccounts-1) }
	amt := func() uint64 { return 1 + r.Uint64N(100) }
	switch p := r.IntN(100); {
	case p < 35:
		return ledger.Deposit{Account: acct(), Amount: amt()}
	case p < 50:
		return ledger.Withdrawal{Account: acct(), Amount: amt()}
	case p < 90:
		from, to := acct(), acct()
		for to == from {
			to = acct()
		}
		return ledger.Transfer{From: from, To: to, Amount: amt()}
	default:
		n := 2 + r.IntN(3)
		perm := r.Perm(testAccounts - 1)[:n]
		legs := make([]ledger.Leg, n)
		var sum int64
		for i := range n - 1 {
			legs[i] = ledger.Leg{Account: uint64(perm[i] + 1), Delta: int64(amt()) - 50}
			if legs[i].Delta == 0 {
				legs[i].Delta = 1
			}
			sum += legs[i].Delta
		}
		legs[n-1] = ledger.Leg{Account: uint64(perm[n-1] + 1), Delta: -sum}
		if legs[n-1].Delta == 0 {
			legs[n-1].Delta = 7 // a zero-sum violation
		}
		c := ledger.Composite{Legs: legs}
		if r.IntN(2) == 0 {
			c.Flags = ledger.NoNegative
		}
		return c
	}
}

type submitted struct {
	id   ledger.TxID
	op   ledger.Op
	fail ledger.FailReason
	seen bool // fail comes from a Result
}

// TestEndToEnd runs concurrent clients over loopback, each mixing
// pipelined single submits, submit-and-wait and batches, then checks every
// balance and every observed fail reason against a sequential model
// replayed in tx id order: 100 clients x 10,000 ops (about 5 s, 30 s
// under -race), or 20 x 200 with -short.
func TestEndToEnd(t *testing.T) {
	clients, perClient := 100, 10_000
	if testing.Short() {
		clients, perClient = 20, 200
	}
	f := startServer(t, Config{})
	ctx := context.Background()
	var mu sync.Mutex
	var all []submitted
	var wg sync.WaitGroup
	for ci := range clients {
		wg.Go(func() {
			c, err := client.Dial(ctx, f.s.Addr().String(), client.WithConns(1))
			if !assert.NoError(t, err) {
				return
			}
			defer c.Close()
			r := rand.New(rand.NewPCG(uint64(ci), 99))
			var mine []submitted
			var pmu sync.Mutex
			var pwg sync.WaitGroup
			for done := 0; done < perClient; {
				switch mode := r.IntN(10); {
				case mode < 4: // a batch
					n := min(1+r.IntN(64), perClient-done)
					ops := make([]ledger.Op, n)
					for i := range ops {
						ops[i] = randOp(r)
					}
					first, last, err := c.SubmitBatch(ctx, ops, ledger.Sequenced)
					if !assert.NoError(t, err) {
						return
					}
					assert.Equal(t, first+ledger.TxID(n-1), last)
					for i, op := range ops {
						mine = append(mine, submitted{id: first + ledger.TxID(i), op: op})
					}
					done += n
				default: // pipelined singles: 8 in flight at once
					n := min(8, perClient-done)
					for range n {
						op := randOp(r)
						wait := r.IntN(2) == 0
						pwg.Go(func() {
							var s submitted
							if wait {
								res, err := c.SubmitAndWait(ctx, op, ledger.Committed)
								if !assert.NoError(t, err) {
									return
								}
								s = submitted{id: res.ID, op: op, fail: res.Fail, seen: true}
							} else {
								id, err := c.Submit(ctx, op)
								if !assert.NoError(t, err) {
									return
								}
								s = submitted{id: id, op: op}
							}
							pmu.Lock()
							mine = append(mine, s)
							pmu.Unlock()
						})
					}
					pwg.Wait()
					done += n
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Equal(t, clients*perClient, len(all))
	slices.SortFunc(all, func(a, b submitted) int { return int(a.id) - int(b.id) })
	for i := range all {
		require.Equal(t, f.base+ledger.TxID(i+1), all[i].id, "ids are unique and contiguous")
	}
	m := &model{bal: make([]int64, testAccounts)}
	for _, s := range all {
		got := m.apply(s.op)
		if s.seen {
			require.Equal(t, got, s.fail, "tx %d %#v", s.id, s.op)
		}
	}
	c := f.dial(t)
	require.NoError(t, c.Wait(ctx, all[len(all)-1].id, ledger.Snapshot))
	var sum int64
	for a := range uint64(testAccounts) {
		b, err := c.Balance(ctx, a)
		require.NoError(t, err)
		require.Equal(t, m.bal[a], b, "account %d", a)
		sum += b
	}
	assert.Zero(t, sum)
}

// TestClientReconnectsAfterRestart: the server restarts on the same
// address; the client's next call dials again and sees the durable state.
func TestClientReconnectsAfterRestart(t *testing.T) {
	dir := t.TempDir()
	open := func(addr string) (*ledger.Ledger, *Server) {
		l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: testAccounts})
		require.NoError(t, err)
		s, err := New(l, Config{Addr: addr, HTTPAddr: "off", Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		require.NoError(t, s.Start())
		return l, s
	}
	l, s := open("127.0.0.1:0")
	createAccounts(t, l)
	addr := s.Addr().String()
	ctx := context.Background()
	c, err := client.Dial(ctx, addr, client.WithConns(1))
	require.NoError(t, err)
	defer c.Close()
	res, err := c.SubmitAndWait(ctx, ledger.Deposit{Account: 5, Amount: 55, UserRef: 77}, ledger.Committed)
	require.NoError(t, err)
	require.NoError(t, s.Shutdown(ctx))
	require.NoError(t, l.Close())

	l, s = open(addr)
	defer func() {
		require.NoError(t, s.Shutdown(ctx))
		require.NoError(t, l.Close())
	}()
	// the old connection is dead; this call dials a new one
	dup, err := c.SubmitAndWait(ctx, ledger.Deposit{Account: 5, Amount: 55, UserRef: 77}, ledger.Snapshot)
	require.NoError(t, err)
	assert.Equal(t, ledger.Duplicate, dup.Fail, "the retry with the same UserRef did not execute twice")
	assert.Equal(t, res.ID, dup.DupOf)
	b, err := c.Balance(ctx, 5)
	require.NoError(t, err)
	assert.Equal(t, int64(55), b)
}
