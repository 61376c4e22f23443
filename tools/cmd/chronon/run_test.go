package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// longTopology runs (practically) forever: the source and sink of the
// minimal example, with no termination and a huge cycle limit.
var longTopology = []byte("simulation: {cycles: 1000000000000}\nunits:\n  - {name: p, type: minimal.source}\n  - {name: c, type: minimal.sink}\nconnections:\n  - {from: p.out, to: c.in}\n")

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "chronon")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

// TestRunSignal interrupts a real run and checks what it leaves: a CSV of
// whole intervals only, a trace that parses, no temporary files, a report,
// and status 128 + the signal.
func TestRunSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	topo := writeFile(t, "long.yaml", longTopology)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		dir := t.TempDir()
		ctrs, trace := filepath.Join(dir, "c.csv"), filepath.Join(dir, "t.json")
		cmd := exec.Command(bin, "run", "--json", "--counters", ctrs, "--counter-interval", "30000", "--trace", trace, topo)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Start())
		// Running once its temporary output files exist.
		require.Eventually(t, func() bool { e, _ := os.ReadDir(dir); return len(e) == 2 }, 20*time.Second, 10*time.Millisecond)
		time.Sleep(500 * time.Millisecond) // some cycles to write; the assertions hold for any count above 0
		require.NoError(t, cmd.Process.Signal(tc.sig))
		err := cmd.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, stderr.String())
		assert.Equal(t, tc.code, ee.ExitCode(), stderr.String())

		var res runResult
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), stdout.String())
		assert.True(t, res.Interrupted)
		assert.Positive(t, res.Cycles)
		assert.Zero(t, res.Cycles%30000, "stopped on a counter-interval boundary")

		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		assert.ElementsMatch(t, []string{"c.csv", "t.json"}, names, "no temporary files left")

		f, err := os.Open(ctrs)
		require.NoError(t, err)
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		require.NoError(t, err)
		require.Equal(t, int(res.Cycles/30000)+1, len(rows), "a header and one row per whole interval")
		last := rows[len(rows)-1]
		assert.Equal(t, strconv.FormatUint(res.Cycles-1, 10), last[1], "the last row ends at the last cycle run")

		data, err := os.ReadFile(trace)
		require.NoError(t, err)
		assert.True(t, json.Valid(data), "the trace is valid JSON: %.200s", data)
	}
}

func TestRunJSON(t *testing.T) {
	topo := writeFile(t, "m.yaml", []byte("simulation: {cycles: 1000}\nunits:\n  - {name: p, type: minimal.source}\n  - {name: c, type: minimal.sink}\nconnections:\n  - {from: p.out, to: c.in}\n"))
	out, errOut, code := runApp(t, "run", "--json", topo)
	require.Equal(t, 0, code, errOut)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, float64(1000), res["cycles"])
	assert.Equal(t, "c: sum 498501", "c: "+res["reports"].(map[string]any)["c"].(string))
	assert.NotContains(t, res, "termination")
	assert.NotContains(t, res, "interrupted")
	assert.Empty(t, errOut, "no progress where stderr is not a terminal")

	out, _, code = runApp(t, "validate", "--json", topo)
	require.Equal(t, 0, code)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	assert.Equal(t, map[string]any{"path": topo, "units": float64(2), "connections": float64(1),
		"cycles": float64(1000), "workers": float64(1)}, v)
}

func TestRunWritesFilesOnlyWhenComplete(t *testing.T) {
	dir := t.TempDir()
	ctrs := filepath.Join(dir, "c.csv")
	// The topology is refused after the files would be created: nothing is left.
	bad := writeFile(t, "o.yaml", []byte("units:\n  - {name: p, type: minimal.source}\n"))
	_, _, code := runApp(t, "run", "--counters", ctrs, bad)
	require.Equal(t, 2, code)
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries)
}

// TestEveryFlagHasEnvVar: each flag of each command can come from the
// environment, as CHRONON_<FLAG> (CHRONON_BENCH_<FLAG> for bench).
func TestEveryFlagHasEnvVar(t *testing.T) {
	app := newApp(&bytes.Buffer{}, &bytes.Buffer{})
	for _, cmd := range app.Commands {
		for _, f := range cmd.Flags {
			ev, ok := f.(interface{ GetEnvVars() []string })
			require.True(t, ok, "%s --%s", cmd.Name, f.Names()[0])
			assert.NotEmpty(t, ev.GetEnvVars(), "%s --%s has no environment variable", cmd.Name, f.Names()[0])
		}
	}
	t.Setenv("CHRONON_CYCLES", "11")
	topo := writeFile(t, "m.yaml", []byte("simulation: {cycles: 1000}\nunits:\n  - {name: p, type: minimal.source}\n  - {name: c, type: minimal.sink}\nconnections:\n  - {from: p.out, to: c.in}\n"))
	out, _, code := runApp(t, "run", topo)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "c: sum 45", "CHRONON_CYCLES=11")
}

func TestHelpListsExitCodes(t *testing.T) {
	out, _, code := runApp(t, "--help")
	require.Equal(t, 0, code)
	for _, s := range []string{"EXIT STATUS", "130", "143", "2    an invalid topology"} {
		assert.Contains(t, out, s)
	}
	out, _, code = runApp(t, "--version")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "chronon version ")
}

// TestRunProgressOnTerminal runs the binary under a pseudo-terminal
// (script(1)) and through a pipe: the bar, with its percentage, shows on
// the terminal only.
func TestRunProgressOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	scriptPath, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed")
	}
	bin := buildBinary(t)
	topo := writeFile(t, "long.yaml", longTopology)
	args := bin + " run --cycles 4000000 --progress-every 1ms " + topo
	out, err := exec.Command(scriptPath, "-q", "-e", "-c", args, "/dev/null").CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Regexp(t, `\d+%.*Mcycles/s`, string(out))
	assert.Contains(t, string(out), "reached the cycle limit")

	var stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "--cycles", "4000000", "--progress-every", "1ms", topo)
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run())
	assert.Empty(t, stderr.String(), "no progress into a pipe")
}
