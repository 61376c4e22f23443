package chronon_test

import (
	"fmt"
	"testing"

	"github.com/lanework/lanework/chronon"
)

// Wide messages (more than four words with their envelope) are written into
// and read out of lanes in place, narrow ones by value (conn.go, wide).
// The same random topologies carrying a wide payload must produce the
// event streams of the uint64 ones, sequentially and in parallel, with the
// broadcast transport on and off.
func TestDeterminismWideMessages(t *testing.T) {
	seeds := 30
	if raceEnabled {
		seeds = 8
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			sd := uint64(seed)*7919 + 3
			for _, bc := range []bool{true, false} {
				want := scenario{build: randomTopology(sd, chronon.WithBroadcast(bc)), run: runFor(400)}.outcome(t, 1)
				wide := scenario{build: randomTopologyOf[widePayload](sd, chronon.WithBroadcast(bc)), run: runFor(400)}
				for _, w := range []int{1, 2, 3} {
					if d := firstDivergence(want, wide.outcome(t, w)); d != "" {
						t.Fatalf("broadcast %v, wide payload, %d workers: %s", bc, w, d)
					}
				}
			}
		})
	}
}

// An InPort's idle cycle (inport.go, receive) is only a cache: forgetting
// it before every cycle must not change any event, for narrow and wide
// payloads, sequentially and in parallel.
func TestIdleIsOnlyACache(t *testing.T) {
	seeds := 30
	if raceEnabled {
		seeds = 8
	}
	forgetting := func(n uint64) func(*chronon.Simulation) error {
		return func(s *chronon.Simulation) error {
			for range n {
				chronon.ForgetIdle(s)
				if err := s.Run(1); err != nil {
					return err
				}
			}
			return nil
		}
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			sd := uint64(seed)*104729 + 11
			for name, build := range map[string]func(*testing.T) *chronon.Simulation{
				"narrow": randomTopology(sd),
				"wide":   randomTopologyOf[widePayload](sd),
			} {
				want := scenario{build: build, run: runFor(400)}.outcome(t, 1)
				for _, w := range []int{1, 2} {
					if d := firstDivergence(want, scenario{build: build, run: forgetting(400)}.outcome(t, w)); d != "" {
						t.Fatalf("%s, idle forgotten every cycle, %d workers: %s", name, w, d)
					}
				}
			}
		})
	}
}
