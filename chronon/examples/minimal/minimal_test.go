package minimal_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lanework/lanework/chronon"
	"github.com/lanework/lanework/chronon/examples/minimal"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMinimal(t *testing.T) {
	s, sink, err := minimal.New()
	require.NoError(t, err)
	require.NoError(t, s.Run(101))
	assert.Equal(t, uint64(100*99/2), sink.Sum, "values 0..99 arrive by cycle 100")
	assert.Zero(t, testing.AllocsPerRun(10, func() { _ = s.Run(1000) }))
}

func TestMinimalYAML(t *testing.T) {
	r := chronon.NewRegistry()
	minimal.Register(r)
	s, _, err := chronon.Parse("minimal.yaml", minimal.Topology, r)
	require.NoError(t, err)
	require.NoError(t, s.Run(11))
	u, _ := s.Unit("consumer")
	assert.Equal(t, "sum 45", u.(chronon.Reporter).Report())
}

// TestBuild10kSanity builds 10,000 units and 40,000 edges. Its time bound
// only catches a pathological (say quadratic) Build, with room for -race on
// a loaded machine; the bar (under 1 s) is BenchmarkBuild10k's to measure.
func TestBuild10kSanity(t *testing.T) {
	s, err := minimal.Random(10000, 1)
	require.NoError(t, err)
	assert.Equal(t, 40000, s.Connections())
	start := time.Now()
	require.NoError(t, s.Build())
	assert.Less(t, time.Since(start), 30*time.Second, "a sanity bound, not the bar")
}

// BenchmarkBuild10k builds 10,000 units and 40,000 edges (construction
// excluded).
func BenchmarkBuild10k(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		s, err := minimal.Random(10000, 1)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := s.Build(); err != nil {
			b.Fatal(err)
		}
	}
}

func Example() {
	s, sink, err := minimal.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = s.Run(5) // values 0..3 arrive in cycles 1..4
	fmt.Println(sink.Report())
	// Output: sum 6
}
