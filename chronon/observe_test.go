package chronon_test

import (
	"bytes"
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
	require.Len(t, tr.TraceEvents, 5)
	assert.Equal(t, "thread_name", tr.TraceEvents[0].Name)
	assert.Equal(t, "u", tr.TraceEvents[0].Args["name"])
	assert.Equal(t, "quad", tr.TraceEvents[1].Name)
	assert.Equal(t, uint64(3), tr.TraceEvents[1].Ts)
	assert.Equal(t, "X", tr.TraceEvents[2].Ph)
	assert.Equal(t, uint64(0), tr.TraceEvents[2].Ts)
	assert.Equal(t, uint64(4), tr.TraceEvents[2].Dur)
	assert.Equal(t, uint64(7), tr.TraceEvents[3].Ts)
}

func TestObservationOffCostsNothing(t *testing.T) {
	s := chronon.New()
	require.NoError(t, s.Add("u", &counted{}))
	require.NoError(t, s.Build())
	require.NoError(t, s.Run(100))
	assert.Zero(t, testing.AllocsPerRun(10, func() { _ = s.Run(1000) }), "events are dropped without allocating")
}
