package ledgercluster

import (
	"context"
	"slices"
	"sync"
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
	var saveMu sync.Mutex
	var leaderSaves, followerSaves []int64
	saveObserver = func(_ uint64, leader bool, took time.Duration) {
		saveMu.Lock()
		if leader {
			leaderSaves = append(leaderSaves, int64(took))
		} else {
			followerSaves = append(followerSaves, int64(took))
		}
		saveMu.Unlock()
	}
	defer func() { saveObserver = nil }()
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
	// Where the tail comes from: the fsync'd writes on the path.
	saveMu.Lock()
	defer saveMu.Unlock()
	p99 := func(v []int64) float64 {
		if len(v) == 0 {
			return 0
		}
		slices.Sort(v)
		return float64(v[len(v)*99/100]) / 1e6
	}
	st := l.Stats()
	b.ReportMetric(p99(leaderSaves), "raftsave-leader-p99-ms")
	b.ReportMetric(p99(followerSaves), "raftsave-follower-p99-ms")
	b.ReportMetric(float64(histP99(&st.WALSyncTimes))/1e6, "walsync-leader-p99-ms")
	b.ReportMetric(float64(st.WALBatches)/float64(max(1, len(leaderSaves))), "walbatches-per-raftsave")
}

// histP99 is the upper bound of the bucket that holds h's 99th percentile.
func histP99(h *ledger.Histogram) uint64 {
	n, want := uint64(0), h.Count()*99/100
	for i, c := range h.Counts {
		if n += c; n > want {
			if i == len(h.Counts)-1 {
				return h.Bound(i - 1)
			}
			return h.Bound(i)
		}
	}
	return 0
}
