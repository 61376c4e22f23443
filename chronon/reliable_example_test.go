package chronon_test

import (
	"fmt"

	"github.com/lanework/lanework/chronon"
)

// Retry offers one new value per cycle through a ReliableSender.
type Retry struct {
	chronon.Base
	Out  chronon.ReliableSender[int]
	next int
}

func (r *Retry) Tick() {
	if r.Out.Free() && r.Out.Offer(r.next) {
		r.next++
	}
}

// Slow prints what it receives, taking one message every third cycle.
type Slow struct {
	chronon.Base
	In chronon.InPort[int]
}

func (s *Slow) Tick() {
	if s.Cycle()%3 == 0 {
		if v, ok := s.In.TryReceive(); ok {
			fmt.Printf("cycle %d: got %d\n", s.Cycle(), v)
		}
	}
}

func ExampleReliableSender() {
	s := chronon.New()
	r, k := &Retry{}, &Slow{}
	_ = s.Add("retry", r)
	_ = s.Add("slow", k)
	// Not a flip-flop (delay 2): one message in flight or unread at a time.
	_ = chronon.Connect(&r.Out, &k.In, chronon.Capacity(1), chronon.Delay(2))
	if err := s.Build(); err != nil {
		fmt.Println(err)
		return
	}
	_ = s.Run(10)
	fmt.Println("stalls:", r.Out.Stalls(), "holding:", r.Out.Holding())
	// Output:
	// cycle 3: got 0
	// cycle 6: got 1
	// cycle 9: got 2
	// stalls: 9 holding: true
}
