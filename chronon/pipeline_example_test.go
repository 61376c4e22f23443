package chronon_test

import (
	"fmt"

	"github.com/lanework/lanework/chronon"
)

func ExamplePipeline() {
	p, err := chronon.NewPipeline[int](3)
	if err != nil {
		fmt.Println(err)
		return
	}
	for step := range 6 {
		// Value v reaches the output after two steps and would leave at
		// step v+3; the output is blocked at step 3, so the full pipeline
		// stalls and stage 0 refuses value 3.
		if step != 3 {
			if v, ok := p.Out().Take(); ok {
				fmt.Printf("step %d: out %d\n", step, v)
			}
		}
		p.Step()
		if !p.Push(step) {
			fmt.Printf("step %d: stage 0 full\n", step)
		}
	}
	// Output:
	// step 3: stage 0 full
	// step 4: out 0
	// step 5: out 1
}
