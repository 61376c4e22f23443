package pressure_test

import (
	"fmt"

	"github.com/lanework/lanework/pressure"
)

// A stage that sums what an entry point sends it. The stage reports every
// iteration to the manager and leaves all waiting to it; the entry point
// wakes the manager before and after publishing each item.
func Example() {
	m := pressure.New(pressure.Balanced)
	in := make(chan int, 16) // stands in for any queue with a non-blocking pop

	st, err := m.Register("summer")
	if err != nil {
		panic(err)
	}
	done := make(chan int)
	go func() {
		sum := 0
		for {
			select {
			case v := <-in:
				st.OnWork()
				sum += v
				continue
			default:
			}
			if !st.OnEmpty() {
				break
			}
		}
		for len(in) > 0 { // closed: drain what was published before Close
			sum += <-in
		}
		done <- sum
	}()

	for i := 1; i <= 100; i++ {
		m.Wake() // before publishing: a parked stage starts waking now
		in <- i
		m.Wake() // after publishing: required for correctness
	}
	m.Close()
	fmt.Println("sum:", <-done)
	// Output: sum: 5050
}

func ExampleParseWaitStrategy() {
	w, err := pressure.ParseWaitStrategy("low-cpu")
	fmt.Println(w, err)
	_, err = pressure.ParseWaitStrategy("fast")
	fmt.Println(err)
	// Output:
	// low-cpu <nil>
	// pressure: unknown wait strategy "fast" (valid: "low-latency", "balanced", "low-cpu")
}
