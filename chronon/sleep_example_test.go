package chronon_test

import (
	"fmt"

	"github.com/lanework/lanework/chronon"
)

// Requester sends a request, then sleeps for 10 cycles.
type Requester struct {
	chronon.Base
	Out chronon.OutPort[int] `chronon:"out"`
	n   int
}

func (*Requester) MaySleep() {}

func (r *Requester) Tick() {
	r.Out.Send(r.n)
	r.n++
	r.SleepUntil(r.Cycle() + 10)
}

// Memory serves what has arrived, then sleeps until a request arrives.
type Memory struct {
	chronon.Base
	In    chronon.InPort[int] `chronon:"in"`
	ticks int
}

func (*Memory) MaySleep() {}

func (m *Memory) Tick() {
	m.ticks++
	for v, ok := m.In.TryReceive(); ok; v, ok = m.In.TryReceive() {
		fmt.Printf("cycle %d: request %d\n", m.Cycle(), v)
	}
	m.SleepUntilReceive()
}

// Blinker ticks on its clock only.
type Blinker struct{ chronon.Base }

func (b *Blinker) Tick() { fmt.Printf("cycle %d: blink\n", b.Cycle()) }

// A requester that sleeps between requests, a memory that sleeps until a
// request arrives (delay 3), and a unit on a clock of period 8, phase 3:
// in 30 cycles the engine ticks them 3, 4 and 4 times.
func ExampleSleeper() {
	s := chronon.New()
	req, mem := &Requester{}, &Memory{}
	_ = s.Add("req", req)
	_ = s.Add("mem", mem)
	_ = s.Add("blink", &Blinker{})
	_ = s.SetClock("blink", chronon.Clock{Period: 8, Phase: 3})
	_ = chronon.Connect(&req.Out, &mem.In, chronon.Delay(3))
	if err := s.Build(); err != nil {
		fmt.Println(err)
		return
	}
	if err := s.Run(30); err != nil {
		fmt.Println(err)
	}
	fmt.Printf("memory ticked %d times in %d cycles\n", mem.ticks, s.Cycle())
	// Output:
	// cycle 3: request 0
	// cycle 3: blink
	// cycle 11: blink
	// cycle 13: request 1
	// cycle 19: blink
	// cycle 23: request 2
	// cycle 27: blink
	// memory ticked 4 times in 30 cycles
}
