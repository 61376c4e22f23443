package cpupipeline_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon/examples/cpupipeline"
)

var update = flag.Bool("update", false, "rewrite testdata/counters.golden.csv from this code")

// TestGoldenCounters pins the pipeline's simulated behaviour: every
// counter of every unit per 5,000-cycle interval, and writeback's report
// (commits, final cycle, flushes, digest), for a run to 200,000 commits.
// The file was written by the pipeline as it was before its ALU and L2
// used the toolkit's StageRegister (commit 071593d), with
//
//	go test ./examples/cpupipeline -run TestGoldenCounters -update
//
// so a rewrite of the units that changes any simulated result fails here.
func TestGoldenCounters(t *testing.T) {
	s, cfg, wb, err := cpupipeline.Load(small(200000))
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, s.DumpCounters(&buf, 5000))
	_, err = s.RunUntilTermination(cfg.Cycles)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	buf.WriteString("# " + wb.Report() + "\n")

	path := filepath.Join("testdata", "counters.golden.csv")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), buf.String())
}
