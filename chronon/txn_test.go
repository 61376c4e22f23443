package chronon_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// dispatcher sends n messages to iq and one to rob per cycle, as one
// transaction, and logs commits ('s', V = first value) and aborts ('x').
type dispatcher struct {
	chronon.Base
	IQ     chronon.OutPort[uint64]
	ROB    chronon.NoCancelOutPort[uint64]
	tx     chronon.PortTransaction
	width  func(c uint64) int
	next   uint64
	events []event
}

func (d *dispatcher) Events() []event { return d.events }

func (d *dispatcher) Tick() {
	n := d.width(d.Cycle())
	if n == 0 {
		return
	}
	for i := range n {
		chronon.Reserve(&d.tx, &d.IQ, d.next+uint64(i))
	}
	chronon.Reserve(&d.tx, &d.ROB, d.next)
	if d.tx.Commit() {
		d.events = append(d.events, event{d.Cycle(), 's', d.next})
		d.next += uint64(n)
	} else {
		d.events = append(d.events, event{d.Cycle(), 'x', d.next})
	}
}

// taker receives up to take(c) messages a cycle and logs them.
type taker struct {
	chronon.Base
	In     chronon.InPort[uint64]
	take   func(c uint64) int
	events []event
}

func (k *taker) Events() []event { return k.events }

func (k *taker) Tick() {
	for range k.take(k.Cycle()) {
		v, ok := k.In.TryReceive()
		if !ok {
			return
		}
		k.events = append(k.events, event{k.Cycle(), 'r', v})
		if v%4 == 0 {
			k.Log(slog.LevelDebug, "recv", "received", "v", v)
		} else {
			k.Log(slog.LevelInfo, "queue", "received", "v", v)
		}
	}
}

// TestTransactionAllOrNone: the issue queue (capacity 4, rate 2) and the
// reorder buffer (capacity 3) both receive a dispatch, or neither does.
func TestTransactionAllOrNone(t *testing.T) {
	s := chronon.New()
	d := &dispatcher{width: func(uint64) int { return 2 }}
	iq := &taker{take: func(c uint64) int { return int(c % 3) }}
	rob := &taker{take: func(c uint64) int { return int(c % 2) }}
	require.NoError(t, s.Add("dispatch", d))
	require.NoError(t, s.Add("iq", iq))
	require.NoError(t, s.Add("rob", rob))
	require.NoError(t, chronon.Connect(&d.IQ, &iq.In, chronon.Capacity(4), chronon.Rate(2)))
	require.NoError(t, chronon.Connect(&d.ROB, &rob.In, chronon.Capacity(3)))
	require.NoError(t, s.Build())
	require.NoError(t, s.Run(200))

	var commits, aborts int
	for _, e := range d.events {
		if e.Kind == 's' {
			commits++
		} else {
			aborts++
		}
	}
	require.Positive(t, commits)
	require.Positive(t, aborts, "the consumers are slower than the dispatcher: some dispatches must be refused")
	// Every committed dispatch reached both queues, in order; no aborted one reached either.
	var iqv, robv []uint64
	for _, e := range iq.events {
		iqv = append(iqv, e.V)
	}
	for _, e := range rob.events {
		robv = append(robv, e.V)
	}
	for i, v := range robv {
		assert.Equal(t, uint64(2*i), v, "rob message %d", i)
	}
	for i, v := range iqv {
		assert.Equal(t, uint64(i), v, "iq message %d", i)
	}
	assert.LessOrEqual(t, len(iqv), 2*commits)
	assert.GreaterOrEqual(t, len(iqv), 2*commits-4, "at most the iq's capacity is still unread")
	assert.GreaterOrEqual(t, len(robv), commits-3, "at most the rob's capacity is still unread")
}

// TestTransactionRefusal: Reserve reports the refusal that dooms the
// transaction; Commit then sends nothing, Abort sends nothing, and the
// next transaction starts afresh.
func TestTransactionRefusal(t *testing.T) {
	s := chronon.New()
	p := &prod{}
	k := &cons{take: func(uint64) int { return 0 }}
	open := &prod{} // unconnected: accepts and discards
	require.NoError(t, s.Add("p", p))
	require.NoError(t, s.Add("k", k))
	require.NoError(t, s.Add("open", open))
	require.NoError(t, chronon.Connect(&p.Out, &k.In, chronon.Capacity(2), chronon.Rate(chronon.Unlimited)))
	require.NoError(t, s.Build())
	var tx chronon.PortTransaction
	var steps []bool
	p.plan = func(c uint64) []int {
		switch c {
		case 0:
			steps = append(steps, chronon.Reserve(&tx, &p.Out, 1), chronon.Reserve(&tx, &open.Out, 9))
			tx.Abort()
			steps = append(steps, chronon.Reserve(&tx, &p.Out, 2), chronon.Reserve(&tx, &p.Out, 3),
				chronon.Reserve(&tx, &p.Out, 4), chronon.Reserve(&tx, &open.Out, 9))
			assert.Equal(t, 4, tx.Len())
			steps = append(steps, tx.Commit())
			assert.Zero(t, tx.Len())
			steps = append(steps, chronon.Reserve(&tx, &p.Out, 5), chronon.Reserve(&tx, &p.Out, 6), tx.Commit())
		case 1:
			steps = append(steps, chronon.Reserve(&tx, &p.Out, 7), tx.Commit())
		}
		return nil
	}
	require.NoError(t, s.Run(3))
	assert.Equal(t, []bool{true, true, true, true, false, false, false, true, true, true, false, false}, steps)
	k.take = nil
	require.NoError(t, s.Run(2))
	assert.Equal(t, []got{{3, 5}, {3, 6}}, k.got, "only the committed pair arrived")
}

// TestTransactionDeterminism runs dispatchers whose transactions span
// ports to consumers on other workers (and a fan-in with a plain sender),
// with consumers of random speed, sequentially and with 1 to 8 workers.
func TestTransactionDeterminism(t *testing.T) {
	for seed := range uint64(6) {
		sc := scenario{
			build: func(t *testing.T) *chronon.Simulation {
				s := chronon.New()
				var ds [3]*dispatcher
				var ks [4]*taker
				for i := range ds {
					sd := mix(seed*31 + uint64(i))
					ds[i] = &dispatcher{width: func(c uint64) int { return int(mix(sd^c) % 4) }}
					require.NoError(t, s.Add(fmtName("d", i), ds[i]))
				}
				for i := range ks {
					sk := mix(seed*37 + uint64(i) + 100)
					ks[i] = &taker{take: func(c uint64) int { return int(mix(sk^c) % 3) }}
					require.NoError(t, s.Add(fmtName("k", i), ks[i]))
				}
				for i, d := range ds {
					require.NoError(t, chronon.Connect(&d.IQ, &ks[i].In, chronon.Capacity(int(1+mix(seed+uint64(i))%4)), chronon.Rate(2), chronon.Delay(1+i)))
					require.NoError(t, chronon.Connect(&d.ROB, &ks[(i+1)%len(ks)].In, chronon.Capacity(int(2+mix(seed^uint64(i))%3)), chronon.Delay(2)))
				}
				require.NoError(t, chronon.Connect(&ds[0].IQ, &ks[3].In, chronon.Capacity(3), chronon.Rate(2))) // a fanout in one transaction
				require.NoError(t, s.Build())
				return s
			},
			run: func(s *chronon.Simulation) error { return s.Run(3000) },
		}
		_, used := checkDeterminism(t, sc, 2)
		assert.Greater(t, used, 1, "the parallel engine ran")
	}
}

func fmtName(p string, i int) string { return p + string(rune('0'+i)) }

// TestTransactionPortInTwo: a port reserved by two open transactions is a
// modelling bug, reported as the unit's *UnitError.
func TestTransactionPortInTwo(t *testing.T) {
	s := chronon.New()
	p := &prod{}
	require.NoError(t, s.Add("p", p))
	require.NoError(t, s.Build())
	var a, b chronon.PortTransaction
	p.plan = func(uint64) []int {
		chronon.Reserve(&a, &p.Out, 1)
		chronon.Reserve(&a, &p.Out, 2) // the same transaction again: fine
		chronon.Reserve(&b, &p.Out, 3)
		return nil
	}
	var ue *chronon.UnitError
	require.ErrorAs(t, s.Run(1), &ue)
	assert.Equal(t, "p", ue.Unit)
	assert.Contains(t, ue.Error(), "p.Out is in another open PortTransaction")
}
