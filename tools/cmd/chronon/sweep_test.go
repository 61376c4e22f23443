package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
	"github.com/lanework/lanework/chronon/examples/cpupipeline"
)

// TestSweep: a 2 x 3 grid of the CPU pipeline gives one row per point, in
// grid order, each equal to a run of that point on its own, whatever the
// number of jobs.
func TestSweep(t *testing.T) {
	derived := append(cpupipeline.WithCommitTarget(5000), "derived:\n  - {name: ipc, expr: writeback.Committed / cycles}\n"...)
	topo := writeFile(t, "cpu.yaml", derived)
	var outs []string
	for _, jobs := range []string{"1", "3"} {
		csvPath := filepath.Join(t.TempDir(), "sweep.csv")
		out, errOut, code := runApp(t, "sweep", "-j", jobs, "-o", csvPath, "-g", "fetch.width=1,4", "-g", "fetch.seed=1,2,3", "-p", "writeback.width=2", topo)
		require.Equal(t, 0, code, errOut)
		assert.Empty(t, out)
		b, err := os.ReadFile(csvPath)
		require.NoError(t, err)
		outs = append(outs, string(b))
	}
	assert.Equal(t, outs[0], outs[1], "jobs change no result")
	rows, err := csv.NewReader(strings.NewReader(outs[0])).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 7)
	head := rows[0]
	assert.Equal(t, []string{"fetch.width", "fetch.seed", "cycles", "terminated_by", "reason", "error"}, head[:6])
	assert.Equal(t, "ipc", head[len(head)-1])
	col := slices.Index(head, "writeback.Committed")
	require.Positive(t, col)
	i := 1
	for _, width := range []string{"1", "4"} {
		for _, seed := range []string{"1", "2", "3"} {
			row := rows[i]
			i++
			assert.Equal(t, []string{width, seed}, row[:2])
			// The same point run on its own.
			var ps []chronon.ParamOverride
			for _, p := range []string{"writeback.width=2", "fetch.width=" + width, "fetch.seed=" + seed} {
				o, err := chronon.ParseParamOverride(p)
				require.NoError(t, err)
				ps = append(ps, o)
			}
			s, cfg, err := chronon.Load(topo, registry(), chronon.WithParams(ps...))
			require.NoError(t, err)
			_, err = s.RunUntilTermination(cfg.Cycles)
			require.NoError(t, err)
			assert.Equal(t, strconv.FormatUint(s.Cycle(), 10), row[2], "point %s/%s", width, seed)
			assert.Equal(t, []string{"writeback", "commit-target", ""}, row[3:6])
			assert.Equal(t, "5000", row[col])
			ipc, err := strconv.ParseFloat(row[len(row)-1], 64)
			require.NoError(t, err)
			assert.InDelta(t, 5000/float64(s.Cycle()), ipc, 1e-12)
			require.NoError(t, s.Close())
		}
	}
	assert.NotEqual(t, rows[1][2], rows[4][2], "the width changes the run")
}

func TestSweepErrors(t *testing.T) {
	topo := writeFile(t, "cpu.yaml", cpupipeline.WithCommitTarget(1000))
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"-g", "fetch.widht=1,2"}, `-p fetch.widht=1: unit "fetch" has no parameter "widht"`, 2},
		{[]string{"-g", "fetch.width=1,x"}, `point 1 (fetch.width=x): `, 2},
		{[]string{"-g", "nope.width=1"}, `no unit "nope"`, 2},
		{[]string{"-g", "fetch.width=1,,2"}, `an empty value`, 2},
		{[]string{"-g", "width=1"}, `not written unit.param=value`, 2},
		{[]string{"-j", "0", "-g", "fetch.width=1"}, `--jobs must be at least 1`, 2},
	} {
		_, errOut, code := runApp(t, append(append([]string{"sweep"}, tc.args...), topo)...)
		assert.Equal(t, tc.code, code, errOut)
		assert.Contains(t, errOut, tc.want)
	}
}

// TestRunParamsAndDumpConfig: run -p overrides a parameter (here the
// commit target), refuses unknown ones by name, and --dump-config prints
// the effective topology, which runs like the original.
func TestRunParamsAndDumpConfig(t *testing.T) {
	topo := writeFile(t, "cpu.yaml", cpupipeline.Topology)
	out, errOut, code := runApp(t, "run", "--progress=false", "-p", "writeback.commit_target=3000", "-p", "fetch.seed=7", topo)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "committed 3000 instructions")

	_, errOut, code = runApp(t, "run", "-p", "writeback.target=3", topo)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `-p writeback.target=3: unit "writeback" has no parameter "target" (want one of commit_target, width)`)
	_, errOut, code = runApp(t, "run", "-p", "wb.width=3", topo)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `-p wb.width=3: no unit "wb"`)

	dump, errOut, code := runApp(t, "run", "--dump-config", "-p", "writeback.commit_target=3000", "-p", "fetch.seed=7", topo)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, dump, "params: {commit_target: 3000, width: 4}")
	assert.Equal(t, 29, strings.Count(dump, "- from: "), "23 entries, the flush fanout to 7 ports as 7 connections")
	eff := writeFile(t, "effective.yaml", []byte(dump))
	again, _, code := runApp(t, "run", "--progress=false", eff)
	require.Equal(t, 0, code)
	_, rest, _ := strings.Cut(out, "\n")
	_, restAgain, _ := strings.Cut(again, "\n")
	assert.Equal(t, rest, restAgain, "the effective topology runs the same simulation")
}

// BenchmarkSweep runs a 16-point sweep of the CPU pipeline (4 fetch widths
// x 4 seeds, 100,000 commits each) with one job and with two: on an idle
// 2-core host the second should take at most 0.6x the first.
func BenchmarkSweep(b *testing.B) {
	topo := filepath.Join(b.TempDir(), "cpu.yaml")
	require.NoError(b, os.WriteFile(topo, cpupipeline.WithCommitTarget(100000), 0o644))
	for _, jobs := range []string{"1", "2"} {
		b.Run("jobs="+jobs, func(b *testing.B) {
			for b.Loop() {
				var out, errOut bytes.Buffer
				err := newApp(&out, &errOut).Run([]string{"chronon", "sweep", "-j", jobs, "-g", "fetch.width=1,2,3,4", "-g", "fetch.seed=1,2,3,4", topo})
				if err != nil {
					b.Fatal(err, errOut.String())
				}
			}
		})
	}
}
