package chronon_test

import (
	"fmt"

	"github.com/lanework/lanework/chronon"
)

func ExampleVersionedRegister() {
	pc, err := chronon.NewVersionedRegister(8, uint32(0x100))
	if err != nil {
		fmt.Println(err)
		return
	}
	pc.Write(5, 0x200)
	pc.Write(9, 0x300)
	v, at := pc.Read()
	fmt.Printf("now %#x (written in cycle %d)\n", v, at)
	v, at, _ = pc.At(7)
	fmt.Printf("at cycle 7: %#x (written in cycle %d)\n", v, at)
	v, _, _ = pc.At(2)
	fmt.Printf("at cycle 2: %#x\n", v)
	// Output:
	// now 0x300 (written in cycle 9)
	// at cycle 7: 0x200 (written in cycle 5)
	// at cycle 2: 0x100
}
