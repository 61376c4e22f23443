package chronon_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// got is one received message.
type got struct {
	Cycle uint64
	V     int
}

// prod sends according to plan: plan(cycle) returns the values to try.
type prod struct {
	chronon.Base
	Out  chronon.OutPort[int]
	plan func(c uint64) []int
	sent []got
	fail []got
}

func (p *prod) Tick() {
	if p.plan == nil {
		return
	}
	for _, v := range p.plan(p.Cycle()) {
		if p.Out.Send(v) {
			p.sent = append(p.sent, got{p.Cycle(), v})
		} else {
			p.fail = append(p.fail, got{p.Cycle(), v})
		}
	}
}

// cons receives up to take(cycle) messages per cycle (all if take is nil),
// after calling before(cycle) if set.
type cons struct {
	chronon.Base
	In     chronon.InPort[int]
	take   func(c uint64) int
	before func(c *cons)
	keep   func(v *int) bool
	got    []got
}

func (k *cons) Tick() {
	if k.before != nil {
		k.before(k)
	}
	n := 1 << 30
	if k.take != nil {
		n = k.take(k.Cycle())
	}
	for range n {
		var v int
		var ok bool
		if k.keep != nil {
			v, ok = k.In.ReceiveFiltered(k.keep)
		} else {
			v, ok = k.In.TryReceive()
		}
		if !ok {
			break
		}
		k.got = append(k.got, got{k.Cycle(), v})
	}
}

// every sends the cycle number each cycle while c < n.
func every(n uint64) func(uint64) []int {
	return func(c uint64) []int {
		if c < n {
			return []int{int(c)}
		}
		return nil
	}
}

// pair builds prod -> cons with opts; consFirst adds the consumer first.
func pair(t *testing.T, consFirst bool, p *prod, k *cons, opts ...chronon.Option) *chronon.Simulation {
	t.Helper()
	s := chronon.New()
	if consFirst {
		require.NoError(t, s.Add("cons", k))
		require.NoError(t, s.Add("prod", p))
	} else {
		require.NoError(t, s.Add("prod", p))
		require.NoError(t, s.Add("cons", k))
	}
	require.NoError(t, chronon.Connect(&p.Out, &k.In, opts...))
	require.NoError(t, s.Build())
	return s
}
