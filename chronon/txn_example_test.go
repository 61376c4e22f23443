package chronon_test

import (
	"fmt"

	"github.com/lanework/lanework/chronon"
)

// Dispatch sends each instruction to an issue queue and a reorder buffer,
// both or neither.
type Dispatch struct {
	chronon.Base
	IQ   chronon.OutPort[int]
	ROB  chronon.OutPort[int]
	tx   chronon.PortTransaction
	next int
}

func (d *Dispatch) Tick() {
	chronon.Reserve(&d.tx, &d.IQ, d.next)
	chronon.Reserve(&d.tx, &d.ROB, d.next)
	if d.tx.Commit() {
		fmt.Printf("cycle %d: dispatched %d\n", d.Cycle(), d.next)
		d.next++
	} else {
		fmt.Printf("cycle %d: stalled\n", d.Cycle())
	}
}

// Sink drains its input every period cycles.
type Sink struct {
	chronon.Base
	In     chronon.InPort[int]
	period uint64
}

func (s *Sink) Tick() {
	if s.Cycle()%s.period == 0 {
		s.In.TryReceive()
	}
}

func ExamplePortTransaction() {
	s := chronon.New()
	d := &Dispatch{}
	iq, rob := &Sink{period: 1}, &Sink{period: 3}
	_ = s.Add("dispatch", d)
	_ = s.Add("iq", iq)
	_ = s.Add("rob", rob)
	_ = chronon.Connect(&d.IQ, &iq.In, chronon.Capacity(4))
	// The reorder buffer holds two and drains every third cycle: it alone
	// decides when dispatch stalls, and the issue queue never sees a
	// message the reorder buffer refused.
	_ = chronon.Connect(&d.ROB, &rob.In, chronon.Capacity(2))
	if err := s.Build(); err != nil {
		fmt.Println(err)
		return
	}
	_ = s.Run(6)
	// Output:
	// cycle 0: dispatched 0
	// cycle 1: dispatched 1
	// cycle 2: stalled
	// cycle 3: stalled
	// cycle 4: dispatched 2
	// cycle 5: stalled
}
