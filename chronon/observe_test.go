package chronon_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// counted counts ticks and even cycles, and traces every 4th cycle.
type counted struct {
	chronon.Base
	Ticks chronon.Counter
	Evens chronon.Counter `chronon:"evens"`
}

func (c *counted) Tick() {
	c.Ticks.Inc()
	if c.Cycle()%2 == 0 {
		c.Evens.Add(1)
	}
	if c.Cycle()%4 == 3 {
		c.Event("quad")
		c.Span("window", c.Cycle()-3)
	}
}

func TestCountersCSV(t *testing.T) {
	s := chronon.New()
	require.NoError(t, s.Add("u", &counted{}))
	require.NoError(t, s.Add("v", &counted{}))
	require.NoError(t, s.Build())
	var buf bytes.Buffer
	require.NoError(t, s.DumpCounters(&buf, 4))
	require.NoError(t, s.Run(10))
	require.NoError(t, s.Close())
	assert.Equal(t, strings.Join([]string{
		"from_cycle,to_cycle,u.Ticks,u.evens,v.Ticks,v.evens",
		"0,3,4,2,4,2",
		"4,7,4,2,4,2",
		"8,9,2,1,2,1", // the partial last interval, written by Close
		"",
	}, "\n"), buf.String())
	assert.Error(t, s.DumpCounters(&buf, 0))
}

// TestCountersCSVIntervalEnds: Close writes only a non-empty last
// interval. A simulation closed before its first cycle writes the header
// alone (it once wrote a row ending at cycle 2^64-1), and one that ends on
// an interval boundary writes no empty interval.
func TestCountersCSVIntervalEnds(t *testing.T) {
	const header = "from_cycle,to_cycle,u.Ticks,u.evens\n"
	for _, tc := range []struct {
		cycles uint64
		want   string
	}{
		{0, header},
		{8, header + "0,3,4,2\n4,7,4,2\n"},
	} {
		s := chronon.New()
		require.NoError(t, s.Add("u", &counted{}))
		require.NoError(t, s.Build())
		var buf bytes.Buffer
		require.NoError(t, s.DumpCounters(&buf, 4))
		if tc.cycles > 0 {
			require.NoError(t, s.Run(tc.cycles))
		}
		require.NoError(t, s.Close())
		assert.Equal(t, tc.want, buf.String(), "closed after %d cycles", tc.cycles)
	}
}

func TestTraceJSON(t *testing.T) {
	s := chronon.New()
	u := &counted{}
	require.NoError(t, s.Add("u", u))
	require.NoError(t, s.Build())
	assert.False(t, u.Tracing())
	var buf bytes.Buffer
	s.TraceTo(&buf)
	assert.True(t, u.Tracing())
	require.NoError(t, s.Run(8))
	require.NoError(t, s.Close())
	var tr struct {
		TraceEvents []struct {
			Ph   string         `json:"ph"`
			Name string         `json:"name"`
			Tid  int            `json:"tid"`
			Ts   uint64         `json:"ts"`
			Dur  uint64         `json:"dur"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &tr), buf.String())
	require.Len(t, tr.TraceEvents, 6)
	assert.Equal(t, "process_name", tr.TraceEvents[0].Name)
	assert.Equal(t, "chronon", tr.TraceEvents[0].Args["name"])
	assert.Equal(t, "thread_name", tr.TraceEvents[1].Name)
	assert.Equal(t, "u", tr.TraceEvents[1].Args["name"])
	assert.Equal(t, "quad", tr.TraceEvents[2].Name)
	assert.Equal(t, uint64(3), tr.TraceEvents[2].Ts)
	assert.Equal(t, "X", tr.TraceEvents[3].Ph)
	assert.Equal(t, uint64(0), tr.TraceEvents[3].Ts)
	assert.Equal(t, uint64(4), tr.TraceEvents[3].Dur)
	assert.Equal(t, uint64(7), tr.TraceEvents[4].Ts)
}

func TestTraceStreams(t *testing.T) {
	// Events are written as the run goes, not held until Close.
	s := chronon.New()
	require.NoError(t, s.Add("u", &counted{}))
	require.NoError(t, s.Build())
	var buf bytes.Buffer
	s.TraceTo(&buf)
	require.NoError(t, s.Run(4000))
	n := strings.Count(buf.String(), `"quad"`)
	assert.GreaterOrEqual(t, n, 3*1024/4, "events of the first 3 intervals are written")
	require.NoError(t, s.Close())
	assert.Equal(t, 1000, strings.Count(buf.String(), `"quad"`))
	require.NoError(t, json.Unmarshal(buf.Bytes(), new(map[string]any)))
}

// quoted has a counter whose name needs CSV quoting.
type quoted struct {
	N chronon.Counter `chronon:"wb,\"x\""`
}

func (q *quoted) Tick() { q.N.Inc() }

func TestCountersCSVQuotesNames(t *testing.T) {
	s := chronon.New()
	require.NoError(t, s.Add("u", &quoted{}))
	require.NoError(t, s.Build())
	var buf bytes.Buffer
	require.NoError(t, s.DumpCounters(&buf, 5))
	require.NoError(t, s.Run(5))
	require.NoError(t, s.Close())
	assert.Equal(t, "from_cycle,to_cycle,\"u.wb,\"\"x\"\"\"\n0,4,5\n", buf.String())
	rows, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"from_cycle", "to_cycle", `u.wb,"x"`}, {"0", "4", "5"}}, rows)
}

func TestObservationOffCostsNothing(t *testing.T) {
	s := chronon.New()
	require.NoError(t, s.Add("u", &counted{}))
	require.NoError(t, s.Build())
	require.NoError(t, s.Run(100))
	assert.Zero(t, testing.AllocsPerRun(10, func() { _ = s.Run(1000) }), "events are dropped without allocating")
}
