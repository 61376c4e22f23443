package chronon_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// relay forwards everything it receives.
type relay struct {
	chronon.Base
	In  chronon.InPort[int]
	Out chronon.OutPort[int]
}

func (r *relay) Tick() {
	if v, ok := r.In.TryReceive(); ok {
		r.Out.Send(v)
	}
}

func TestZeroDelayCycleRejected(t *testing.T) {
	s := chronon.New()
	a, b, c := &relay{}, &relay{}, &relay{}
	require.NoError(t, s.Add("a", a))
	require.NoError(t, s.Add("b", b))
	require.NoError(t, s.Add("c", c))
	require.NoError(t, chronon.Connect(&a.Out, &b.In, chronon.Delay(0)))
	require.NoError(t, chronon.Connect(&b.Out, &c.In, chronon.Delay(0)))
	require.NoError(t, chronon.Connect(&c.Out, &a.In, chronon.Delay(0)))
	err := s.Build()
	require.ErrorIs(t, err, chronon.ErrZeroDelayCycle)
	var ce *chronon.CycleError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{"a", "b", "c"}, ce.Units)
	assert.Equal(t, "chronon: zero-delay cycle through units a, b, c: a.Out -> b.In (delay 0), b.Out -> c.In (delay 0), c.Out -> a.In (delay 0); "+
		"add a registered delay (Delay(1) or more) on one of these connections or merge the logic into one unit", err.Error())

	// The same ring with one registered delay builds.
	s = chronon.New()
	a, b, c = &relay{}, &relay{}, &relay{}
	require.NoError(t, s.Add("a", a))
	require.NoError(t, s.Add("b", b))
	require.NoError(t, s.Add("c", c))
	require.NoError(t, chronon.Connect(&a.Out, &b.In, chronon.Delay(0)))
	require.NoError(t, chronon.Connect(&b.Out, &c.In, chronon.Delay(1)))
	require.NoError(t, chronon.Connect(&c.Out, &a.In, chronon.Delay(0)))
	require.NoError(t, s.Build())
}

func TestZeroDelaySelfLoopRejected(t *testing.T) {
	s := chronon.New()
	a := &relay{}
	require.NoError(t, s.Add("a", a))
	require.NoError(t, chronon.Connect(&a.Out, &a.In, chronon.Delay(0)))
	err := s.Build()
	require.ErrorIs(t, err, chronon.ErrZeroDelayCycle)
	assert.Contains(t, err.Error(), "zero-delay self-loop on unit a: a.Out -> a.In (delay 0)")
}

func TestZeroDelayChainTicksInOrder(t *testing.T) {
	// p -> a -> b -> k with zero delay, added in reverse order: a value
	// crosses the chain in its cycle.
	s := chronon.New()
	p, a, b, k := &prod{plan: every(4)}, &relay{}, &relay{}, &cons{}
	require.NoError(t, s.Add("k", k))
	require.NoError(t, s.Add("b", b))
	require.NoError(t, s.Add("a", a))
	require.NoError(t, s.Add("p", p))
	require.NoError(t, chronon.Connect(&p.Out, &a.In, chronon.Delay(0)))
	require.NoError(t, chronon.Connect(&a.Out, &b.In, chronon.Delay(0)))
	require.NoError(t, chronon.Connect(&b.Out, &k.In, chronon.Delay(0)))
	require.NoError(t, s.Build())
	require.NoError(t, s.Run(4))
	assert.Equal(t, []got{{0, 0}, {1, 1}, {2, 2}, {3, 3}}, k.got)
}

func TestTermination(t *testing.T) {
	s := chronon.New()
	p := &prod{}
	p.plan = func(c uint64) []int {
		if c == 3 {
			p.Terminate("first", 3, "first wins")
			p.Terminate("second", 4, "ignored")
		}
		return nil
	}
	q := &prod{}
	q.plan = func(c uint64) []int {
		if c == 3 {
			q.Terminate("other", 5, "same cycle, later in order")
		}
		return nil
	}
	require.NoError(t, s.Add("p", p))
	require.NoError(t, s.Add("q", q))
	require.NoError(t, s.Build())
	term, err := s.RunUntilTermination(100)
	require.NoError(t, err)
	assert.Equal(t, chronon.Termination{Unit: "p", Cycle: 3, Reason: "first", Code: 3, Message: "first wins"}, term)
	assert.Equal(t, uint64(4), s.Cycle(), "the terminating cycle completes")
	require.NoError(t, s.Run(10))
	assert.Equal(t, uint64(4), s.Cycle(), "a terminated simulation does not run")
	require.NoError(t, s.Close())
}

func TestRunUntilTerminationLimit(t *testing.T) {
	s := chronon.New()
	require.NoError(t, s.Add("p", &prod{}))
	require.NoError(t, s.Build())
	_, err := s.RunUntilTermination(7)
	assert.ErrorIs(t, err, chronon.ErrCycleLimit)
	assert.Equal(t, uint64(7), s.Cycle())
}

type doner struct {
	chronon.Base
	at uint64
}

func (d *doner) Tick()      {}
func (d *doner) Done() bool { return d.Cycle() >= d.at }

func TestRunUntilDone(t *testing.T) {
	s := chronon.New()
	require.NoError(t, s.Add("a", &doner{at: 5}))
	require.NoError(t, s.Add("b", &doner{at: 9}))
	require.NoError(t, s.Add("c", &prod{}))
	require.NoError(t, s.Build())
	require.NoError(t, s.RunUntilDone(100))
	assert.Equal(t, uint64(10), s.Cycle(), "b ticks cycle 9 and is then done")
	s2 := chronon.New()
	require.NoError(t, s2.Add("a", &doner{at: 50}))
	require.NoError(t, s2.Build())
	assert.ErrorIs(t, s2.RunUntilDone(10), chronon.ErrCycleLimit)
}

type panicker struct {
	chronon.Base
	at uint64
}

func (p *panicker) Tick() {
	if p.Cycle() == p.at {
		panic(errors.New("boom"))
	}
}

func TestPanicBecomesError(t *testing.T) {
	s := chronon.New()
	require.NoError(t, s.Add("ok", &prod{}))
	require.NoError(t, s.Add("bad", &panicker{at: 6}))
	require.NoError(t, s.Build())
	err := s.Run(100)
	require.ErrorIs(t, err, chronon.ErrUnitPanic)
	var ue *chronon.UnitError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "bad", ue.Unit)
	assert.Equal(t, uint64(6), ue.Cycle)
	assert.EqualError(t, err, `chronon: unit "bad" panicked at cycle 6: boom`)
	assert.ErrorIs(t, s.Run(1), chronon.ErrUnitPanic, "a failed simulation stays failed")
}

func TestOverflowIsAFailure(t *testing.T) {
	p := &prod{plan: every(1 << 20)}
	k := &cons{take: upTo(1<<40, 0)}
	s := pair(t, false, p, k)
	err := s.Run(10000)
	require.ErrorIs(t, err, chronon.ErrOverflow)
	var oe *chronon.OverflowError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "prod.Out -> cons.In", oe.Conn)
	assert.Equal(t, uint64(chronon.UnboundedDepth), oe.Cycle)
	assert.Equal(t, uint64(chronon.UnboundedDepth+1), s.Cycle())
}

func TestTopologyErrors(t *testing.T) {
	s := chronon.New()
	a := &relay{}
	require.NoError(t, s.Add("a", a))
	assert.ErrorIs(t, s.Add("a", &relay{}), chronon.ErrTopology, "duplicate name")
	assert.ErrorIs(t, s.Add("x..y", &relay{}), chronon.ErrTopology, "empty group segment")
	assert.ErrorIs(t, s.Add(".x", &relay{}), chronon.ErrTopology, "empty group segment")
	assert.ErrorIs(t, s.Add("x.a b", &relay{}), chronon.ErrTopology, "space in a segment")
	assert.NoError(t, s.Add("x.y", &relay{}), "a unit in group x")
	assert.ErrorIs(t, s.Add("b", a), chronon.ErrTopology, "ports bound twice")
	var loose relay
	assert.ErrorIs(t, chronon.Connect(&a.Out, &loose.In), chronon.ErrTopology)
	assert.ErrorIs(t, chronon.Connect(&a.Out, &a.In, chronon.Delay(-1)), chronon.ErrTopology)
	other := chronon.New()
	b := &relay{}
	require.NoError(t, other.Add("b", b))
	assert.ErrorIs(t, chronon.Connect(&a.Out, &b.In), chronon.ErrTopology)
	assert.ErrorIs(t, s.Run(1), chronon.ErrNotBuilt)
	require.NoError(t, s.Build())
	assert.ErrorIs(t, s.Build(), chronon.ErrBuilt)
	assert.ErrorIs(t, chronon.Connect(&a.Out, &a.In), chronon.ErrBuilt)
}

// multi sends from several producers into one fan-in port.
type multi struct {
	chronon.Base
	Out  chronon.OutPort[int]
	id   int
	rng  *rand.Rand
	seq  int
	sent []sentMsg
}

type sentMsg struct {
	arrive uint64
	conn   int
	seq    int
	v      int
}

func (m *multi) Tick() {
	for range m.rng.IntN(3) {
		v := m.id<<20 | m.seq
		if m.Out.Send(v) {
			m.sent = append(m.sent, sentMsg{conn: m.id, seq: m.seq, v: v, arrive: m.Cycle()})
			m.seq++
		}
	}
}

// TestFanInOrderMatchesReference checks the merge against a model that
// keeps every sent message and pops the smallest (arrive, connection,
// send order) among those ready.
func TestFanInOrderMatchesReference(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 2 + rng.IntN(6)
		s := chronon.New()
		k := &cons{}
		var takes []int
		k.take = func(c uint64) int {
			for uint64(len(takes)) <= c {
				takes = append(takes, rng.IntN(4))
			}
			return takes[c]
		}
		require.NoError(t, s.Add("sink", k))
		ps := make([]*multi, n)
		delays := make([]uint64, n)
		for i := range ps {
			ps[i] = &multi{id: i, rng: rand.New(rand.NewPCG(seed, uint64(i)))}
			require.NoError(t, s.Add("p"+string(rune('a'+i)), ps[i]))
			delays[i] = uint64(rng.IntN(4))
			require.NoError(t, chronon.Connect(&ps[i].Out, &k.In, chronon.Delay(int(delays[i])), chronon.Rate(chronon.Unlimited)))
		}
		require.NoError(t, s.Build())
		const cycles = 300
		require.NoError(t, s.Run(cycles))

		var pool []sentMsg
		for i, p := range ps {
			for _, m := range p.sent {
				m.arrive += delays[i]
				pool = append(pool, m)
			}
		}
		key := func(a, b sentMsg) int {
			if a.arrive != b.arrive {
				return int(a.arrive) - int(b.arrive)
			}
			if a.conn != b.conn {
				return a.conn - b.conn
			}
			return a.seq - b.seq
		}
		slices.SortFunc(pool, key)
		var want []got
		for c := range uint64(cycles) {
			for range takes[c] {
				if len(pool) == 0 || pool[0].arrive > c {
					break
				}
				want = append(want, got{c, pool[0].v})
				pool = pool[1:]
			}
		}
		require.Equal(t, want, k.got, "seed %d", seed)
	}
}
