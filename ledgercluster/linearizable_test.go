package ledgercluster

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lanework/lanework/ledger"
)

// balanceModel is one account: deposits add, reads return the balance.
var balanceModel = porcupine.Model{
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		s, in := state.(int64), input.(linInput)
		if in.read {
			return output.(int64) == s, s
		}
		return true, s + in.amount
	},
}

type linInput struct {
	read   bool
	amount int64
}

// TestLinearizable records a history of deposits (acknowledged at
// Replicated, retried with their idempotency key across a leader stop)
// and ReadBalance calls from several clients, with their real-time
// intervals, and checks it with porcupine against a single balance.
func TestLinearizable(t *testing.T) {
	c := startInproc(t, 3, false)
	c.leader(10 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu      sync.Mutex
		history []porcupine.Operation
		stopped = make(chan int, 1) // the stopped node, once stopped
		wg      sync.WaitGroup
	)
	record := func(op porcupine.Operation) {
		mu.Lock()
		history = append(history, op)
		mu.Unlock()
	}
	alive := func(i int) bool {
		select {
		case s := <-stopped:
			stopped <- s
			return s != i
		default:
			return true
		}
	}
	for k := range 3 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(k), 1))
			at := k
			next := func() {
				for at = (at + 1) % 3; !alive(at); at = (at + 1) % 3 {
				}
				time.Sleep(2 * time.Millisecond) // back off before the next replica
			}
			for seq := uint64(1); ctx.Err() == nil; seq++ {
				call := time.Now().UnixNano()
				if rng.IntN(3) == 0 {
					b, err := c.nodes[at].ReadBalance(ctx, 1)
					if err != nil {
						next() // a read that failed has no effect: not recorded
						continue
					}
					record(porcupine.Operation{ClientId: k, Input: linInput{read: true}, Call: call, Output: b, Return: time.Now().UnixNano()})
					continue
				}
				amount := int64(1 + rng.IntN(5))
				op := ledger.Deposit{Account: 1, Amount: uint64(amount), UserRef: uint64(k+1)<<32 | seq}
				ret := int64(math.MaxInt64) // outcome unknown unless acknowledged
				for ctx.Err() == nil {
					_, err := c.nodes[at].SubmitAndWait(ctx, op, ledger.Replicated)
					if err == nil {
						ret = time.Now().UnixNano()
						break
					}
					var nl *ledger.NotLeaderError
					if !errors.As(err, &nl) && !errors.Is(err, ledger.ErrClosed) && !errors.Is(err, ledger.ErrFailed) && ctx.Err() == nil {
						t.Errorf("deposit: %v", err)
						return
					}
					next()
				}
				record(porcupine.Operation{ClientId: k, Input: linInput{amount: amount}, Call: call, Output: int64(0), Return: ret})
			}
		})
	}
	time.Sleep(400 * time.Millisecond) // the history grows meanwhile
	ld := c.leader(10 * time.Second)
	stopped <- ld
	if err := c.nodes[ld].Stop(); err != nil {
		t.Errorf("stop leader: %v", err)
	}
	time.Sleep(600 * time.Millisecond)
	cancel()
	wg.Wait()
	reads := 0
	for _, op := range history {
		if op.Input.(linInput).read {
			reads++
		}
	}
	t.Logf("%d operations (%d reads), leader %d stopped midway", len(history), reads, ld+1)
	if reads == 0 || len(history) == reads {
		t.Fatal("the history needs both reads and deposits")
	}
	if res := porcupine.CheckOperationsTimeout(balanceModel, history, 30*time.Second); res != porcupine.Ok {
		t.Fatalf("history is not linearizable: %v", res)
	}
}
