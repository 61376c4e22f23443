package cpupipeline_test

import (
	"fmt"

	"github.com/lanework/lanework/chronon/examples/cpupipeline"
)

// Example runs the reference pipeline to 10,000 commits. The digest is the
// same on every run.
func Example() {
	s, cfg, wb, err := cpupipeline.Load(cpupipeline.WithCommitTarget(10000))
	if err != nil {
		fmt.Println(err)
		return
	}
	t, err := s.RunUntilTermination(cfg.Cycles)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.Reason)
	fmt.Println(wb.Report())
	// Output:
	// commit-target
	// committed 10000 instructions by cycle 9693, 308 flushes, digest 7df18882d6df9f5d
}
