package frontier_test

import (
	"fmt"

	"github.com/lanework/lanework/frontier"
)

func Example() {
	m := frontier.New[string]()
	a, _ := m.AddLane(7, 4) // connection 7, lane 0
	b, _ := m.AddLane(3, 4) // connection 3, lane 1: wins ties against connection 7

	a.TryPush(5, "a@5")
	a.TryPush(9, "a@9")
	b.TryPush(5, "b@5")
	b.TryPush(6, "b@6")

	for cycle := uint64(5); cycle <= 9; cycle++ {
		for {
			v, arrive, ok := m.TryPop(cycle)
			if !ok {
				break
			}
			fmt.Println(cycle, arrive, v)
		}
	}
	fmt.Println(m.Empty())
	// Output:
	// 5 5 b@5
	// 5 5 a@5
	// 6 6 b@6
	// 9 9 a@9
	// true
}

func ExampleMerger_PopFiltered() {
	type msg struct{ epoch, n int }
	m := frontier.New[msg]()
	l, _ := m.AddLane(0, 8)
	for i := range 4 {
		l.TryPush(1, msg{epoch: i / 2, n: i})
	}
	// The receiver squashed epoch 0: its ready messages are consumed unseen.
	valid := func(_ uint64, v *msg) bool { return v.epoch == 1 }
	v, _, _ := m.PopFiltered(1, valid)
	fmt.Println(v.n, m.Flush())
	// Output: 2 1
}

func ExampleNewBounded() {
	m, _ := frontier.NewBounded[int](2) // two admissions per receiver cycle
	l, _ := m.AddLane(0, 8)
	for i := range 5 {
		l.TryPush(0, i)
	}
	for cycle := uint64(0); cycle < 3; cycle++ {
		m.PrepareCycle(cycle)
		for {
			v, _, ok := m.TryPop(cycle)
			if !ok {
				break
			}
			fmt.Print(v, " ")
		}
		fmt.Println("| end of cycle", cycle)
	}
	// Output:
	// 0 1 | end of cycle 0
	// 2 3 | end of cycle 1
	// 4 | end of cycle 2
}

func ExampleMerger_MinArrivalCycle() {
	m := frontier.New[int]()
	l, _ := m.AddLane(0, 2)
	_, ok := m.MinArrivalCycle()
	fmt.Println(ok)
	l.TryPush(12, 1)
	fmt.Println(m.MinArrivalCycle())
	fmt.Println(m.HasReady(11), m.HasReady(12))
	// Output:
	// false
	// 12 true
	// false true
}
