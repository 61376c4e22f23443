package ledger

import (
	"fmt"
	"testing"
)

// BenchmarkSubmitWALMaxBatch is BenchmarkSubmit with WALMaxBatch capped:
// durable throughput against the largest group commit the WAL may make,
// with the mean group it did make (from Stats.WALGroupSizes). At saturation
// the WAL's groups fill to the cap, so the cap is the knob and the mean
// group is what it bought.
func BenchmarkSubmitWALMaxBatch(b *testing.B) {
	ops := benchOps(1<<16, 1_000_000)
	for _, max := range []int{1, 4, 16, 64, 256, 1024, 4096, DefaultWALMaxBatch} {
		b.Run(fmt.Sprintf("max=%d", max), func(b *testing.B) {
			l, err := Open(Config{Dir: b.TempDir(), MaxAccounts: 1_000_000, WALMaxBatch: max})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			submitCommitted(b, l, ops)
			g := l.Stats().WALGroupSizes
			b.ReportMetric(float64(g.Sum)/float64(g.Count()), "tx/group")
		})
	}
}
