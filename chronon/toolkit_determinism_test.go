package chronon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// lsu arbitrates among three inputs (fixed or round-robin) for its
// Pipeline, flushes it when told, sends what leaves it, and sends along
// the value a VersionedRegister held lag cycles earlier.
type lsu struct {
	chronon.Base
	In    [3]chronon.InPort[uint64]
	Out   chronon.OutPort[uint64]
	arb   *chronon.Arbiter
	pipe  *chronon.Pipeline[uint64]
	last  *chronon.VersionedRegister[uint64]
	seed  uint64
	evs   []event
	taken chronon.StageRegister[uint64]
}

func (u *lsu) Events() []event { return u.evs }

func (u *lsu) Tick() {
	c := u.Cycle()
	r := mix(u.seed ^ c)
	if r%29 == 0 {
		cut := r >> 8 % 1000
		n := u.pipe.Flush(func(v *uint64) bool { return *v%1000 >= cut })
		u.evs = append(u.evs, event{c, 'f', uint64(n)})
	}
	if out := u.pipe.Out(); out.Valid() {
		v := *out.Value()
		if old, at, ok := u.last.At(c - min(c, 3)); ok {
			v ^= old<<1 ^ at
		}
		if u.Out.Send(v) {
			u.last.Write(c, v)
			out.Clear()
			u.evs = append(u.evs, event{c, 's', v})
		} else {
			u.evs = append(u.evs, event{c, 'x', v})
		}
	}
	u.pipe.Step()
	if !u.taken.Valid() {
		var req uint64
		for i := range u.In {
			if u.In[i].Ready() {
				req |= 1 << i
			}
		}
		if i := u.arb.Grant(req); i >= 0 {
			if v, ok := u.In[i].TryReceive(); ok {
				u.taken.Load(v)
				u.evs = append(u.evs, event{c, 'r', v<<2 | uint64(i)})
			}
		}
	}
	if v := u.taken.Value(); v != nil && u.pipe.Push(*v) {
		u.taken.Clear()
	}
}

// TestPipelineHelpersDeterminism: a ring of lsus and sources on several
// workers, with stage registers, pipelines, both arbiters and versioned
// registers in use, sequentially and with 1 to 8 workers.
func TestPipelineHelpersDeterminism(t *testing.T) {
	for seed := range uint64(4) {
		sc := scenario{
			build: func(t *testing.T) *chronon.Simulation {
				s := chronon.New()
				var us [5]*lsu
				for i := range us {
					newArb := chronon.NewFixedArbiter
					if i%2 == 1 {
						newArb = chronon.NewRoundRobinArbiter
					}
					arb, err := newArb(3)
					require.NoError(t, err)
					pipe, err := chronon.NewPipeline[uint64](1 + i%3)
					require.NoError(t, err)
					last, err := chronon.NewVersionedRegister[uint64](4, 0)
					require.NoError(t, err)
					us[i] = &lsu{arb: arb, pipe: pipe, last: last, seed: mix(seed + uint64(i))}
					require.NoError(t, s.Add(fmtName("lsu", i), us[i]))
				}
				var src [3]*dispatcher
				for i := range src {
					sd := mix(seed*7 + uint64(i))
					src[i] = &dispatcher{width: func(c uint64) int { return int(mix(sd^c) % 2) }}
					require.NoError(t, s.Add(fmtName("src", i), src[i]))
					require.NoError(t, chronon.Connect(&src[i].IQ, &us[0].In[i], chronon.Capacity(2)))
					require.NoError(t, chronon.Connect(&src[i].ROB, &us[1+i].In[2], chronon.Capacity(2), chronon.Delay(2)))
				}
				for i, u := range us {
					require.NoError(t, chronon.Connect(&u.Out, &us[(i+1)%len(us)].In[i%2], chronon.Capacity(int(1+mix(seed^uint64(i))%3)), chronon.Delay(1+i%3)))
				}
				require.NoError(t, s.Build())
				return s
			},
			run: func(s *chronon.Simulation) error { return s.Run(3000) },
		}
		want, used := checkDeterminism(t, sc, 2)
		assert.Greater(t, used, 1, "the parallel engine ran")
		kinds := map[byte]int{}
		for _, ev := range want.events {
			for _, e := range ev {
				kinds[e.Kind]++
			}
		}
		assert.Positive(t, kinds['s'])
		assert.Positive(t, kinds['x'], "some sends stalled")
		assert.Positive(t, kinds['f'])
	}
}
