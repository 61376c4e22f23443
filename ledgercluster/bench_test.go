package ledgercluster

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
)

// BenchmarkReplicatedThroughput: b.N deposits submitted in batches of
// 1024 to the leader of a 3-replica cluster (real TCP on loopback, real
// disks), timed until the last is Replicated. Group commits grow with the
// load: each is one raft entry.
func BenchmarkReplicatedThroughput(b *testing.B) {
	c := startInproc(b, 3, false)
	l := c.nodes[c.leader(10*time.Second)].Ledger()
	const batch = 1024
	ops := make([]ledger.Op, batch)
	for i := range ops {
		ops[i] = ledger.Deposit{Account: 1 + uint64(i)%1000, Amount: 1}
	}
	st0 := l.Stats()
	b.ResetTimer()
	var last ledger.TxID
	for n := 0; n < b.N; n += batch {
		_, lst, err := l.SubmitBatch(ops[:min(batch, b.N-n)])
		if err != nil {
			b.Fatal(err)
		}
		last = lst
	}
	if err := l.Wait(context.Background(), last, ledger.Replicated); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	st := l.Stats()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tx/s")
	if g := st.WALBatches - st0.WALBatches; g > 0 {
		b.ReportMetric(float64(b.N)/float64(g), "tx/commit")
	}
}

// BenchmarkReplicatedLatency: deposits offered at a fixed 50k tx/s (50
// every millisecond) to the leader; each op's time from Submit to its
// Replicated delivery. b.N ops: -benchtime 100000x is two seconds.
func BenchmarkReplicatedLatency(b *testing.B) {
	const rate, every = 50_000, time.Millisecond
	c := startInproc(b, 3, false)
	l := c.nodes[c.leader(10*time.Second)].Ledger()
	lat := make([]int64, b.N)
	var got atomic.Int64
	done := make(chan struct{})
	b.ResetTimer()
	tick := time.NewTicker(every)
	defer tick.Stop()
	per := int(rate * every / time.Second)
	for i := 0; i < b.N; {
		<-tick.C
		for k := 0; k < per && i < b.N; k, i = k+1, i+1 {
			t0, slot := time.Now(), i
			_, err := l.SubmitFunc(ledger.Deposit{Account: 1 + uint64(i)%1000, Amount: 1}, ledger.Replicated, func(ledger.Result, error) {
				lat[slot] = int64(time.Since(t0))
				if got.Add(1) == int64(b.N) {
					close(done)
				}
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	<-done
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100])/1e6, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1])/1e6, "max-ms")
}
