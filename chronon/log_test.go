package chronon_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// chatty logs one record per cycle in two categories and levels.
type chatty struct {
	chronon.Base
}

func (u *chatty) Tick() {
	c := u.Cycle()
	if c%2 == 0 {
		u.Log(slog.LevelDebug, "fetch", "tick", "even", true)
	} else if u.LogEnabled(slog.LevelWarn, "mem") {
		u.Log(slog.LevelWarn, "mem", "stall", "n", c)
	}
}

func logged(t *testing.T, f chronon.LogFilter, cycles uint64) string {
	t.Helper()
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := chronon.New(chronon.WithLogger(l, f))
	require.NoError(t, s.Group("core0").Add("alu[0]", &chatty{}))
	require.NoError(t, s.Group("core1").Add("alu[0]", &chatty{}))
	require.NoError(t, s.Build())
	require.NoError(t, s.Run(cycles))
	require.NoError(t, s.Close())
	return buf.String()
}

func TestLogFilter(t *testing.T) {
	all := logged(t, chronon.LogFilter{Level: slog.LevelDebug}, 2)
	assert.Equal(t, `level=DEBUG msg=tick cycle=0 unit=core0.alu[0] category=fetch even=true
level=DEBUG msg=tick cycle=0 unit=core1.alu[0] category=fetch even=true
level=WARN msg=stall cycle=1 unit=core0.alu[0] category=mem n=1
level=WARN msg=stall cycle=1 unit=core1.alu[0] category=mem n=1
`, all, "cycle, unit and category in every record, no host time")

	assert.Equal(t, 10, strings.Count(logged(t, chronon.LogFilter{Level: slog.LevelWarn}, 10), "\n"), "level: the warnings only, 5 cycles of 2 units")
	got := logged(t, chronon.LogFilter{Level: slog.LevelDebug, Categories: []string{"fetch"}, Units: []string{"core1.*"}, From: 3, Until: 6}, 100)
	assert.Equal(t, `level=DEBUG msg=tick cycle=4 unit=core1.alu[0] category=fetch even=true
level=DEBUG msg=tick cycle=6 unit=core1.alu[0] category=fetch even=true
`, got)
	assert.Empty(t, logged(t, chronon.LogFilter{Units: []string{"core2.*"}}, 10))
	// Records are written every 1,024 cycles, and the rest at Close.
	assert.Equal(t, 3000, strings.Count(logged(t, chronon.LogFilter{Level: slog.LevelDebug}, 1500), "\n"))
}

// TestNoDefaultLogger: without WithLogger nothing reaches slog.Default,
// not even the engine's message about running sequentially.
func TestNoDefaultLogger(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(old)
	s := chronon.New()
	require.NoError(t, s.Add("a", &chatty{}))
	require.NoError(t, s.Build())
	require.NoError(t, s.SetWorkers(4)) // one unit: sequential, with a reason
	_, reason := s.Engine()
	require.NotEmpty(t, reason)
	require.NoError(t, s.Run(10))
	require.NoError(t, s.Close())
	assert.Empty(t, buf.String())

	var own bytes.Buffer
	s = chronon.New(chronon.WithLogger(slog.New(slog.NewTextHandler(&own, nil)), chronon.LogFilter{}))
	require.NoError(t, s.Add("a", &chatty{}))
	require.NoError(t, s.Build())
	require.NoError(t, s.SetWorkers(4))
	assert.Contains(t, own.String(), "running sequentially")
	assert.Empty(t, buf.String())
}

// TestLogDeterminism: the log of consumers on several workers is
// byte-identical sequentially and with 1 to 8 workers.
func TestLogDeterminism(t *testing.T) {
	run := func(workers int) string {
		var buf bytes.Buffer
		l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		s := chronon.New(chronon.WithLogger(l, chronon.LogFilter{Level: slog.LevelDebug, Units: []string{"k[0-2]"}, From: 100}))
		var ds [3]*dispatcher
		var ks [4]*taker
		for i := range ds {
			ds[i] = &dispatcher{width: func(c uint64) int { return int(mix(c+uint64(i)) % 3) }}
			require.NoError(t, s.Add(fmtName("d", i), ds[i]))
		}
		for i := range ks {
			ks[i] = &taker{take: func(c uint64) int { return int(mix(c^uint64(i*9)) % 3) }}
			require.NoError(t, s.Add(fmtName("k", i), ks[i]))
		}
		for i, d := range ds {
			require.NoError(t, chronon.Connect(&d.IQ, &ks[i].In, chronon.Capacity(3), chronon.Rate(2)))
			require.NoError(t, chronon.Connect(&d.ROB, &ks[i+1].In, chronon.Capacity(2), chronon.Delay(2)))
		}
		require.NoError(t, s.Build())
		s.SetParallelThreshold(0)
		require.NoError(t, s.SetWorkers(workers))
		if workers > 1 {
			used, _ := s.Engine()
			require.Greater(t, used, 1)
		}
		require.NoError(t, s.Run(5000))
		require.NoError(t, s.Close())
		return buf.String()
	}
	want := run(1)
	require.Contains(t, want, "unit=k2 category=queue")
	require.NotContains(t, want, "unit=k3")
	require.NotContains(t, want, "cycle=99 ")
	for _, w := range []int{1, 2, 3, 4, 8} {
		for rep := range 2 {
			require.Equal(t, want, run(w), "%d workers, repetition %d", w, rep)
		}
	}
}
