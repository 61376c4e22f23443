package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon/examples/cpupipeline"
)

// TestRunLog: --log-level writes the units' records in the cycle range to
// stderr, each with its cycle and unit; the same with 2 workers (whose
// engine also logs why it runs sequentially).
func TestRunLog(t *testing.T) {
	topo := writeFile(t, "cpu.yaml", cpupipeline.WithCommitTarget(5000))
	var logs []string
	for _, w := range []string{"1", "2"} {
		_, errOut, code := runApp(t, "run", "--progress=false", "-q", "--workers", w, "--log-level", "info", "--log-units", "fl*", "--log-cycles", "1000:3000", topo)
		require.Equal(t, 0, code, errOut)
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
			if !strings.Contains(l, "chronon: running sequentially") { // the engine's message, with a host time
				lines = append(lines, l)
			}
		}
		require.Greater(t, len(lines), 10, errOut)
		re := regexp.MustCompile(`^level=INFO msg=redirect cycle=(\d+) unit=flush category=flush seq=\d+ gen=\d+$`)
		for _, l := range lines {
			m := re.FindStringSubmatch(l)
			require.NotNil(t, m, l)
			c, _ := strconv.Atoi(m[1])
			assert.True(t, c >= 1000 && c <= 3000, l)
		}
		logs = append(logs, strings.Join(lines, "\n"))
	}
	assert.Equal(t, logs[0], logs[1])

	_, errOut, code := runApp(t, "run", "--log-units", "x", topo)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--log-units needs --log-level")
	_, errOut, code = runApp(t, "run", "--log-level", "info", "--log-cycles", "9:3", topo)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `--log-cycles "9:3": want FROM:UNTIL`)
}
