package pressure

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIdleCPU leaves a Balanced and a LowCPU 4-stage pipeline idle for 2 s
// side by side: together they must use less than 2% of one core, and no stage
// may wake up in that time.
func TestIdleCPU(t *testing.T) {
	var pipes []*pipeline
	var mgrs []*Manager
	for _, s := range []WaitStrategy{Balanced, LowCPU} {
		m := New(s)
		p := startPipeline(managerSystem{m}, pipelineConfig{stages: 4, capacity: 64})
		pipes, mgrs = append(pipes, p), append(mgrs, m)
		defer p.stop()
	}
	for _, p := range pipes {
		for i := range 1000 {
			for !p.publish(uint64(i)) {
				time.Sleep(10 * time.Microsecond)
			}
		}
	}
	for i, p := range pipes {
		require.True(t, p.waitSink(1000, 5*time.Second), "pipeline %d did not deliver", i)
		require.True(t, waitParked(mgrs[i], 5*time.Second), "pipeline %d did not park: %+v", i, mgrs[i].Stats())
	}
	before := make([]Stats, len(mgrs))
	for i, m := range mgrs {
		before[i] = m.Stats()
	}
	const window = 2 * time.Second
	c0, t0 := cpuTime(), time.Now()
	time.Sleep(window)
	c1, el := cpuTime(), time.Since(t0)
	pct := 100 * float64(c1-c0) / float64(el)
	t.Logf("idle CPU of both pipelines: %.3f%% of one core (%v in %v)", pct, c1-c0, el)
	assert.Less(t, pct, 2.0)
	for i, m := range mgrs {
		assert.Equal(t, before[i].Unparks, m.Stats().Unparks, "%v: a stage woke while idle", m.Strategy())
	}
}
