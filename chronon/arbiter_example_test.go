package chronon_test

import (
	"fmt"

	"github.com/lanework/lanework/chronon"
)

func ExampleArbiter() {
	fixed, _ := chronon.NewFixedArbiter(4)
	rr, _ := chronon.NewRoundRobinArbiter(4)
	req := uint64(0b1011) // requesters 0, 1 and 3
	for range 4 {
		fmt.Print(fixed.Grant(req), rr.Grant(req), " ")
	}
	fmt.Println()
	// Output:
	// 0 0 0 1 0 3 0 0
}
