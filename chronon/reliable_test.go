package chronon_test

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// retrier receives up to take(c) messages a cycle and forwards each through
// a ReliableSender; it stops receiving while the sender holds a message.
// A source (In unconnected) offers 0, 1, 2, ...
type retrier struct {
	chronon.Base
	In      chronon.InPort[uint64]
	Out     chronon.ReliableSender[uint64]
	take    func(c uint64) int
	next    uint64
	held    int // cycles that ended with a message held
	events  []event
	sources bool
}

func (r *retrier) Events() []event { return r.events }

func (r *retrier) Tick() {
	r.Out.Pump()
	for range r.take(r.Cycle()) {
		if !r.Out.Free() {
			break
		}
		v := r.next
		if !r.sources {
			var ok bool
			if v, ok = r.In.TryReceive(); !ok {
				break
			}
			r.events = append(r.events, event{r.Cycle(), 'r', v})
		} else {
			r.next++
		}
		if !r.Out.Offer(v) {
			panic("Offer refused a message after Free")
		}
	}
	if r.Out.Holding() {
		r.held++
		r.events = append(r.events, event{r.Cycle(), 'x', 0})
	}
}

// TestReliableSenderExactlyOnce: through a slow capacity-1 edge every
// offered value arrives once, in order, and the stall counter counts the
// cycles in which the held message was refused.
func TestReliableSenderExactlyOnce(t *testing.T) {
	s := chronon.New()
	src := &retrier{sources: true, take: func(c uint64) int { return 1 + int(c%2) }}
	k := &taker{take: func(c uint64) int { return int(c % 4 / 3) }} // one message every fourth cycle
	require.NoError(t, s.Add("src", src))
	require.NoError(t, s.Add("k", k))
	require.NoError(t, chronon.Connect(&src.Out, &k.In, chronon.Capacity(1), chronon.Delay(2)))
	require.NoError(t, s.Build())
	var buf bytes.Buffer
	require.NoError(t, s.DumpCounters(&buf, 1000))
	require.NoError(t, s.Run(400))
	require.NoError(t, s.Close())

	require.NotEmpty(t, k.events)
	for i, e := range k.events {
		require.Equal(t, uint64(i), e.V, "message %d", i)
	}
	assert.Equal(t, uint64(len(k.events)), src.next-1, "one offered value is still held")
	assert.True(t, src.Out.Holding())
	assert.Equal(t, uint64(src.held), src.Out.Stalls())
	assert.Greater(t, src.Out.Stalls(), uint64(200))

	rows, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	require.Equal(t, []string{"from_cycle", "to_cycle", "src.Out.stalls"}, rows[0])
	assert.Equal(t, []string{"0", "399", strconv.FormatUint(src.Out.Stalls(), 10)}, rows[1], "the stall counter is dumped")
}

// TestReliableSenderDeterminism: a ring of retriers and sources with
// reliable senders on capacity-limited edges of mixed delays, sequentially
// and with 1 to 8 workers.
func TestReliableSenderDeterminism(t *testing.T) {
	for seed := range uint64(6) {
		sc := scenario{
			build: func(t *testing.T) *chronon.Simulation {
				s := chronon.New()
				var rs [6]*retrier
				for i := range rs {
					sd := mix(seed*41 + uint64(i))
					rs[i] = &retrier{sources: i%3 == 0, take: func(c uint64) int { return int(mix(sd^c) % 3) }}
					require.NoError(t, s.Add(fmtName("r", i), rs[i]))
				}
				for i, r := range rs {
					to := rs[(i+1)%len(rs)]
					if to.sources {
						to = rs[(i+2)%len(rs)]
					}
					require.NoError(t, chronon.Connect(&r.Out, &to.In,
						chronon.Capacity(int(1+mix(seed+uint64(i))%3)), chronon.Delay(int(1+mix(seed^uint64(i))%3))))
				}
				require.NoError(t, s.Build())
				return s
			},
			run: func(s *chronon.Simulation) error { return s.Run(3000) },
		}
		want, used := checkDeterminism(t, sc, 2)
		assert.Greater(t, used, 1, "the parallel engine ran")
		stalls := 0
		for _, ev := range want.events {
			for _, e := range ev {
				if e.Kind == 'x' {
					stalls++
				}
			}
		}
		assert.Positive(t, stalls, "seed %d: the senders held messages", seed)
	}
}
