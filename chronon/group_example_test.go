package chronon_test

import (
	"fmt"

	"github.com/lanework/lanework/chronon"
)

func ExampleGroup() {
	s := chronon.New()
	core := s.Group("core0")
	c, p := &Counter{}, &Printer{}
	_ = core.Add("fetch", c)
	_ = core.Group("alu").Add("unit[2]", p)
	_ = chronon.Connect(&c.Out, &p.In)
	if err := s.Build(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Units(), c.Out.Name())
	_, _ = s.RunUntilTermination(10)
	// Output:
	// [core0.fetch core0.alu.unit[2]] core0.fetch.out
	// cycle 1: got 0
	// cycle 2: got 1
	// cycle 3: got 2
}
