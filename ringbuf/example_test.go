package ringbuf_test

import (
	"fmt"

	"github.com/lanework/lanework/ringbuf"
)

func ExampleSPSC() {
	r, err := ringbuf.NewSPSC[int](3) // rounded up to 4 slots
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Cap(), r.TryPush(1), r.TryPushN([]int{2, 3, 4, 5}))
	v, ok := r.TryPop()
	fmt.Println(v, ok, r.Len())
	// Output:
	// 4 true 3
	// 1 true 3
}

func ExampleSPSC_Reserve() {
	r, _ := ringbuf.NewSPSC[[2]int](8)
	// The producer fills slots in place, then publishes them at once.
	s := r.Reserve(3)
	for i := range s {
		s[i] = [2]int{i, i * i}
	}
	r.Commit(len(s))
	// The consumer reads them in place, then releases them.
	for _, v := range r.PeekN(8) {
		fmt.Println(v)
	}
	r.Advance(3)
	fmt.Println(r.Len())
	// Output:
	// [0 0]
	// [1 1]
	// [2 4]
	// 0
}

func ExampleSPSC_Drop() {
	r, _ := ringbuf.NewSPSC[[4]int](4)
	r.TryPush([4]int{1, 2, 3, 4})
	r.TryPush([4]int{5, 6, 7, 8})
	// Read the front in place; take it only if it qualifies.
	for p := r.Peek(); p != nil && p[0] < 5; p = r.Peek() {
		fmt.Println(p[3])
		r.Drop()
	}
	fmt.Println(r.Len())
	// Output:
	// 4
	// 1
}

func ExampleMPSC() {
	q, _ := ringbuf.NewMPSC[string](8)
	q.TryPush("deposit")
	first, _ := q.TryPushN([]string{"transfer", "withdraw"}) // contiguous tickets
	fmt.Println("batch starts at ticket", first)
	buf := make([]string, 8)
	start, n := q.TryPopN(buf)
	for i, v := range buf[:n] {
		fmt.Println(start+uint64(i), v)
	}
	// Output:
	// batch starts at ticket 1
	// 0 deposit
	// 1 transfer
	// 2 withdraw
}
