package cpupipeline_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon/examples/cpupipeline"
)

// outcome is what the determinism check compares.
type outcome struct {
	cycle   uint64
	digest  uint64
	message string
	workers int
}

func runWorkers(t *testing.T, src []byte, workers int) outcome {
	t.Helper()
	s, cfg, wb, err := cpupipeline.Load(src)
	require.NoError(t, err)
	s.SetParallelThreshold(0)
	require.NoError(t, s.SetWorkers(workers))
	used, reason := s.Engine()
	require.Empty(t, reason)
	term, err := s.RunUntilTermination(cfg.Cycles)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	return outcome{s.Cycle(), wb.Digest(), term.Message, used}
}

// TestParallelMatchesSequential runs the pipeline with every harness worker
// count and compares cycle count, commit digest and termination.
func TestParallelMatchesSequential(t *testing.T) {
	src := small(20000)
	want := runWorkers(t, src, 1)
	for _, w := range []int{1, 2, 3, 4, 8} {
		for rep := range 2 {
			got := runWorkers(t, src, w)
			require.Equal(t, min(w, 9), got.workers)
			require.Equal(t, want.cycle, got.cycle, "%d workers, repetition %d: final cycle", w, rep)
			require.Equal(t, want.digest, got.digest, "%d workers, repetition %d: digest", w, rep)
			require.Equal(t, want.message, got.message, "%d workers, repetition %d", w, rep)
		}
	}
}

// withLookahead sets the topology's max_lookahead.
func withLookahead(src []byte, la int) []byte {
	return bytes.Replace(src, []byte("  workers: 1\n"), fmt.Appendf(nil, "  workers: 1\n  max_lookahead: %d\n", la), 1)
}

// TestLookaheadMatchesSequential is TestParallelMatchesSequential with a
// lookahead of 4: the parallel engine against the sequential engine with
// the same lookahead (the run ends 3 cycles after the commit target). The
// pipeline's delay-1 feedback leaves one cut with slack: the L2, whose
// responses take 10 cycles, on a worker that trails the rest by up to 3
// cycles (trailCut).
func TestLookaheadMatchesSequential(t *testing.T) {
	src := withLookahead(small(20000), 4)
	want := runWorkers(t, src, 1)
	plain := runWorkers(t, small(20000), 1)
	require.Equal(t, plain.cycle+3, want.cycle, "the stop latency")
	for _, w := range []int{2, 3, 8} {
		got := runWorkers(t, src, w)
		require.Equal(t, want, outcome{got.cycle, got.digest, got.message, want.workers}, "%d workers", w)
	}
}

// BenchmarkPipelineWorkers runs the reference pipeline with 1 (the
// sequential engine), 2 and 8 workers, as configured (the calibration keeps
// the sequential engine: a cycle is under the threshold), and with 2
// and 8 workers forced parallel; and, with a lookahead of 10 (stops 9
// cycles late, so a different model's results), sequentially and forced
// onto 2 workers, where the L2 trails the rest (see trailCut).
func BenchmarkPipelineWorkers(b *testing.B) {
	for _, w := range []int{1, 2, 8, -2, -8, 101, -102} {
		name := fmt.Sprintf("workers=%d", w)
		src := small(0)
		switch {
		case w > 100 || w < -100:
			w = w % 100
			name = fmt.Sprintf("workers=%d-lookahead10", max(w, -w))
			if w < 0 {
				name = fmt.Sprintf("workers=%d-forced-lookahead10", -w)
			}
			src = withLookahead(src, 10)
		case w < 0:
			name = fmt.Sprintf("workers=%d-forced", -w)
		}
		b.Run(name, func(b *testing.B) {
			s, _, _, err := cpupipeline.Load(src)
			require.NoError(b, err)
			n := w
			if w < 0 {
				n = -w
				s.SetParallelThreshold(0)
			}
			require.NoError(b, s.SetWorkers(n))
			b.ResetTimer()
			cpu0 := cpuTime()
			if err := s.Run(uint64(b.N)); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mcycles/s")
			b.ReportMetric(float64(b.N)/(cpuTime()-cpu0).Seconds()/1e6, "Mcycles/cpu-s")
		})
	}
}

// TestCountersMatchAcrossWorkers: the counter dump, with derived counters
// (IPC, the L2's stall rate), is byte-identical for every worker count.
func TestCountersMatchAcrossWorkers(t *testing.T) {
	dump := func(workers int) string {
		s, cfg, _, err := cpupipeline.Load(small(20000))
		require.NoError(t, err)
		require.NoError(t, s.DeriveCounter("ipc", "writeback.Committed / cycles"))
		require.NoError(t, s.DeriveCounter("l2_stall_rate", "l2.Stalls / (l2.Requests + l2.Stalls)"))
		s.SetParallelThreshold(0)
		require.NoError(t, s.SetWorkers(workers))
		var buf bytes.Buffer
		require.NoError(t, s.DumpCounters(&buf, 1000))
		_, err = s.RunUntilTermination(cfg.Cycles)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		return buf.String()
	}
	want := dump(1)
	require.Contains(t, want, ",ipc,l2_stall_rate\n")
	for _, w := range []int{1, 2, 3, 4, 8} {
		require.Equal(t, want, dump(w), "%d workers", w)
	}
}
