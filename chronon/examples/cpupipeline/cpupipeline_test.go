package cpupipeline_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon/examples/cpupipeline"
)

func small(target uint64) []byte { return cpupipeline.WithCommitTarget(target) }

func run(t *testing.T, src []byte) (uint64, string) {
	s, cfg, wb, err := cpupipeline.Load(src)
	require.NoError(t, err)
	term, err := s.RunUntilTermination(cfg.Cycles)
	require.NoError(t, err)
	assert.Equal(t, "commit-target", term.Reason)
	require.NoError(t, s.Close())
	return wb.Digest(), term.Message
}

func TestDigestIsDeterministic(t *testing.T) {
	d1, m1 := run(t, small(50000))
	d2, m2 := run(t, small(50000))
	assert.Equal(t, d1, d2)
	assert.Equal(t, m1, m2)
	t.Log(m1)
}

func TestCommitsAreInOrderAndFlushesHappen(t *testing.T) {
	s, cfg, wb, err := cpupipeline.Load(small(200000))
	require.NoError(t, err)
	_, err = s.RunUntilTermination(cfg.Cycles)
	require.NoError(t, err)
	assert.Equal(t, uint64(200000), wb.Commits())
	ipc := float64(wb.Commits()) / float64(s.Cycle())
	assert.Greater(t, ipc, 0.5)
	assert.Less(t, ipc, 4.0)
	u, _ := s.Unit("flush")
	fe := u.(*cpupipeline.FlushEngine)
	// Surprises (0.001 per instruction) plus the predictor's warm-up over
	// 1024 branch addresses.
	assert.Greater(t, fe.Flushes.Value(), uint64(200))
	assert.Less(t, fe.Flushes.Value(), uint64(1500))
	t.Logf("IPC %.2f, %d flushes, %s", ipc, fe.Flushes.Value(), wb.Report())
}

func TestZeroAllocsPerCycle(t *testing.T) {
	s, _, _, err := cpupipeline.Load(small(0))
	require.NoError(t, err)
	require.NoError(t, s.Run(20000))
	allocs := testing.AllocsPerRun(10, func() { _ = s.Run(2000) })
	assert.Zero(t, allocs)
}

// BenchmarkPipeline runs the reference pipeline without observation.
func BenchmarkPipeline(b *testing.B) {
	s, _, _, err := cpupipeline.Load(small(0))
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	if err := s.Run(uint64(b.N)); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mcycles/s")
	b.ReportMetric(float64(b.N)/(cpuTime()-cpu0).Seconds()/1e6, "Mcycles/cpu-s")
}

// cpuTime returns the process's user plus system CPU time, a measure less
// sensitive than wall time to other load on a shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestBadParamsRefused: out-of-range unit parameters fail Load with the
// unit's line, instead of being replaced by a default or running.
func TestBadParamsRefused(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"width: 4, budget: 0", "width: -4, budget: 0", "width -4 is negative"},
		{"flush_prob: 0.001", "flush_prob: 0.5", "flush_prob 0.5 out of range"},
		{"commit_target: 1000000, width: 4", "commit_target: 1000000, width: -1", "width -1 is negative"},
		{"params: {id: 0}", "params: {id: 7}", "id 7 out of range"},
	} {
		src := strings.Replace(string(cpupipeline.Topology), c.from, c.to, 1)
		require.NotEqual(t, string(cpupipeline.Topology), src, "the topology no longer has %q", c.from)
		_, _, _, err := cpupipeline.Load([]byte(src))
		require.ErrorContains(t, err, c.want)
		require.ErrorContains(t, err, "cpu.yaml:")
	}
}
