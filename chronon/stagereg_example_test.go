package chronon_test

import (
	"fmt"

	"github.com/lanework/lanework/chronon"
)

func ExampleStageRegister() {
	var latch chronon.StageRegister[string]
	fmt.Println(latch.Load("add"), latch.Load("sub")) // the second stalls
	latch.Flush(func(v *string) bool { return *v == "add" })
	fmt.Println(latch.Valid(), latch.Load("sub"))
	v, _ := latch.Take()
	fmt.Println(v, latch.Valid())
	// Output:
	// true false
	// false true
	// sub false
}
