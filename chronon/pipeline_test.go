package chronon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// TestPipelineLatencyAndThroughput: pushing and taking every step, a value
// reaches the output n-1 steps after its push, one per step.
func TestPipelineLatencyAndThroughput(t *testing.T) {
	for n := 1; n <= 5; n++ {
		p, err := chronon.NewPipeline[int](n)
		require.NoError(t, err)
		var out []int
		for step := range 20 {
			if v, ok := p.Out().Take(); ok {
				out = append(out, v)
				assert.Equal(t, step-n, v, "n=%d: value pushed at step %d out at %d", n, v, step)
			}
			p.Step()
			require.True(t, p.Push(step), "n=%d step %d: stage 0 free", n, step)
		}
		assert.Len(t, out, 20-n)
	}
}

// TestPipelineStallsAndFlushes: with a random consumer and random flushes,
// values leave in push order, none is lost except by a flush, the pipeline
// never holds more than its stages, and a stalled output stalls everything
// behind it only once the stages between are full.
func TestPipelineStallsAndFlushes(t *testing.T) {
	const n = 4
	p, err := chronon.NewPipeline[uint64](n)
	require.NoError(t, err)
	var next, last uint64
	flushed := map[uint64]bool{}
	pending := map[uint64]bool{}
	r := uint64(3)
	for step := range 5000 {
		r = mix(r)
		if r%3 == 0 {
			if v, ok := p.Out().Take(); ok {
				require.Greater(t, v+1, last, "step %d: out of order", step)
				last = v + 1
				require.True(t, pending[v])
				delete(pending, v)
			}
		}
		if r>>8%50 == 0 {
			cut := next - r>>16%4
			p.Flush(func(v *uint64) bool {
				if *v >= cut {
					flushed[*v] = true
					delete(pending, *v)
					return true
				}
				return false
			})
		}
		before := p.Occupied()
		full := p.Stage(0).Valid() && p.Stage(1).Valid() && p.Stage(2).Valid() && p.Stage(3).Valid()
		moved := p.Step()
		if full {
			assert.Zero(t, moved, "a full pipeline moves nothing")
		}
		assert.Equal(t, before, p.Occupied(), "a step moves, never drops")
		if p.Push(next) {
			pending[next] = true
			next++
		}
		require.LessOrEqual(t, p.Occupied(), n)
		require.Len(t, pending, p.Occupied())
	}
	assert.NotEmpty(t, flushed)
}

func TestPipelineSize(t *testing.T) {
	_, err := chronon.NewPipeline[int](0)
	assert.ErrorIs(t, err, chronon.ErrTopology)
	assert.ErrorContains(t, err, "at least 1 stage, not 0")
}
