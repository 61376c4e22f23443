package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lanework/lanework/chronon/examples/cpupipeline"
	"github.com/lanework/lanework/tools/internal/exitcode"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runApp runs the CLI with args and returns stdout, stderr and the exit
// status main would use.
func runApp(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := newApp(&out, &errOut).Run(append([]string{"chronon"}, args...))
	if err != nil {
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), exitcode.Of(err)
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

func TestRunPipelineTerminates(t *testing.T) {
	topo := writeFile(t, "cpu.yaml", cpupipeline.WithCommitTarget(20000))
	out, _, code := runApp(t, "run", "--progress=false", topo)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "terminated by writeback at cycle ")
	assert.Contains(t, out, ": commit-target: committed 20000 instructions")
	assert.Regexp(t, `writeback: committed 20000 instructions by cycle \d+, \d+ flushes, digest [0-9a-f]{16}`, out)

	again, _, code := runApp(t, "run", "--progress=false", topo)
	require.Equal(t, 0, code)
	// The first line has the host's wall time; the rest is simulation state.
	_, rest, _ := strings.Cut(out, "\n")
	_, restAgain, _ := strings.Cut(again, "\n")
	assert.Equal(t, rest, restAgain, "deterministic: same report and digest")
}

func TestRunWithCountersAndTrace(t *testing.T) {
	topo := writeFile(t, "cpu.yaml", cpupipeline.WithCommitTarget(5000))
	dir := t.TempDir()
	ctrs, trace := filepath.Join(dir, "c.csv"), filepath.Join(dir, "t.json")
	out, errOut, code := runApp(t, "run", "--progress=false", "--workers", "2", "--counters", ctrs, "--counter-interval", "1000", "--trace", trace, topo)
	require.Equal(t, 0, code, out+errOut)
	assert.Contains(t, errOut, "engine: ", "either engine: observation no longer forces the sequential one")

	f, err := os.Open(ctrs)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Greater(t, len(rows), 3)
	assert.Equal(t, []string{"from_cycle", "to_cycle", "fetch.Fetched"}, rows[0][:3])
	assert.Contains(t, rows[0], "writeback.Committed")
	assert.Equal(t, []string{"0", "999"}, rows[1][:2])
	col := -1
	for i, h := range rows[0] {
		if h == "writeback.Committed" {
			col = i
		}
	}
	total := 0
	for _, r := range rows[1:] {
		n, err := strconv.Atoi(r[col])
		require.NoError(t, err)
		total += n
	}
	assert.Equal(t, 5000, total, "deltas add up to the commits")

	data, err := os.ReadFile(trace)
	require.NoError(t, err)
	var tr struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	require.NoError(t, json.Unmarshal(data, &tr))
	var flushes int
	for _, e := range tr.TraceEvents {
		if e["name"] == "flush" {
			flushes++
			assert.Equal(t, "i", e["ph"])
		}
	}
	assert.Greater(t, flushes, 0)
}

func TestRunErrors(t *testing.T) {
	_, errOut, code := runApp(t, "run")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "want exactly one topology file")

	_, errOut, code = runApp(t, "run", "/nonexistent.yaml")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no such file")

	bad := writeFile(t, "bad.yaml", []byte("units:\n  - {name: a, type: nope}\n"))
	_, errOut, code = runApp(t, "run", bad)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "bad.yaml:2: unknown unit type \"nope\"")

	nolimit := writeFile(t, "m.yaml", []byte("units:\n  - {name: p, type: minimal.source}\n"))
	_, errOut, code = runApp(t, "run", nolimit)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no cycle limit")

	mismatch := writeFile(t, "o.yaml", []byte(`units:
  - {name: p, type: minimal.source}
  - {name: q, type: cpu.l2}
connections:
  - {from: p.out, to: q.req}
`))
	_, errOut, code = runApp(t, "run", "--cycles", "10", mismatch)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "message types differ")

	// Bad flags and commands: status 2 and one line, not the help page.
	out, errOut, code := runApp(t, "run", "--cycles", "-5", mismatch)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `invalid value "-5" for flag -cycles`)
	assert.Empty(t, out)
	_, errOut, code = runApp(t, "frobnicate")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `unknown command "frobnicate"`)
}

func TestRunFixedCycles(t *testing.T) {
	topo := writeFile(t, "m.yaml", []byte("simulation: {cycles: 1000}\nunits:\n  - {name: p, type: minimal.source}\n  - {name: c, type: minimal.sink}\nconnections:\n  - {from: p.out, to: c.in}\n"))
	out, _, code := runApp(t, "run", "--progress=false", topo)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "ran 1000 cycles")
	assert.Contains(t, out, "c: sum 498501") // 0..998
	assert.Contains(t, out, "reached the cycle limit")
	out, _, code = runApp(t, "run", "--progress=false", "--cycles", "11", topo)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "c: sum 45")
}

func TestValidate(t *testing.T) {
	topo := writeFile(t, "cpu.yaml", cpupipeline.Topology)
	out, _, code := runApp(t, "validate", topo)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "ok: 9 units, 29 connections")

	loop := writeFile(t, "loop.yaml", []byte(`units:
  - {name: a, type: cpu.l2}
  - {name: b, type: cpu.alu}
connections:
  - {from: "a.resp[0]", to: b.mem_resp, delay: 0}
  - {from: b.mem, to: a.req, delay: 0}
`))
	_, errOut, code := runApp(t, "validate", loop)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "zero-delay cycle through units")
	assert.Contains(t, errOut, "loop.yaml:5")
	assert.Contains(t, errOut, "add a registered delay")
}

func TestBenchSmall(t *testing.T) {
	out, _, code := runApp(t, "bench", "--count", "1", "--minimal-cycles", "1000", "--pipeline-cycles", "1000", "--build-units", "50")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "minimal, 1000 cycles")
	assert.Contains(t, out, "cpupipeline, 1000 cycles")
	assert.Contains(t, out, "Build, 50 units, 200 edges")
	_, _, code = runApp(t, "bench", "--count", "0")
	assert.Equal(t, 2, code)
}

func TestHelp(t *testing.T) {
	out, _, code := runApp(t, "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "run")
}
