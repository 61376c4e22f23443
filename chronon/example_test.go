package chronon_test

import (
	"fmt"

	"github.com/lanework/lanework/chronon"
)

// Counter sends 0, 1, 2, ... one per cycle.
type Counter struct {
	chronon.Base
	Out  chronon.OutPort[int] `chronon:"out"`
	next int
}

func (c *Counter) Tick() {
	if c.Out.Send(c.next) {
		c.next++
	}
}

// Printer prints what it receives, with its local cycle.
type Printer struct {
	chronon.Base
	In chronon.InPort[int] `chronon:"in"`
}

func (p *Printer) Tick() {
	if v, ok := p.In.TryReceive(); ok {
		fmt.Printf("cycle %d: got %d\n", p.Cycle(), v)
		if v == 2 {
			p.Terminate("done", 0, "received three values")
		}
	}
}

func ExampleConnect() {
	s := chronon.New()
	c, p := &Counter{}, &Printer{}
	_ = s.Add("counter", c)
	_ = s.Add("printer", p)
	// Sent in cycle n, arriving in cycle n+3.
	if err := chronon.Connect(&c.Out, &p.In, chronon.Delay(3), chronon.Capacity(4)); err != nil {
		fmt.Println(err)
		return
	}
	if err := s.Build(); err != nil {
		fmt.Println(err)
		return
	}
	t, err := s.RunUntilTermination(100)
	fmt.Println(t.Reason, t.Cycle, err)
	// Output:
	// cycle 3: got 0
	// cycle 4: got 1
	// cycle 5: got 2
	// done 5 <nil>
}

func ExampleParse() {
	reg := chronon.NewRegistry()
	chronon.Register(reg, "counter", func(string, struct{}) (chronon.Unit, error) { return &Counter{}, nil })
	chronon.Register(reg, "printer", func(string, struct{}) (chronon.Unit, error) { return &Printer{}, nil })
	src := []byte(`
units:
  - {name: c, type: counter}
  - {name: p, type: printer}
connections:
  - {from: c.out, to: p.in, delay: 0}
`)
	s, _, err := chronon.Parse("example.yaml", src, reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = s.Run(10)
	// Output:
	// cycle 0: got 0
	// cycle 1: got 1
	// cycle 2: got 2
}

func ExampleParse_error() {
	reg := chronon.NewRegistry()
	chronon.Register(reg, "counter", func(string, struct{}) (chronon.Unit, error) { return &Counter{}, nil })
	src := []byte(`units:
  - {name: c, type: counter}
connections:
  - {from: c.out, to: c.out, delay: 0}
`)
	_, _, err := chronon.Parse("bad.yaml", src, reg)
	fmt.Println(err)
	// Output:
	// bad.yaml:4: unit "c" has no input port "out" (inputs: none)
}
