package bench

import (
	"context"
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lanework/lanework/pressure"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	runFull   = flag.Bool("ledger.bench", false, "run the harness scenarios in TestHarness")
	duration  = flag.Duration("ledger.duration", 10*time.Second, "length of each TestHarness run")
	strategy  = flag.String("ledger.strategy", "balanced", "wait strategy for TestHarness")
	snapEvery = flag.Int64("ledger.snapshot-every", 0, "ledger SnapshotEvery for TestHarness (0: default, <0: off)")
	scenarios = flag.String("ledger.scenarios", "1,4,1@100000,4@100000", "submitters[@offered tx/s], comma separated")
)

// TestHarnessShort checks that the harness runs and reports sane numbers.
func TestHarnessShort(t *testing.T) {
	r, err := Run(context.Background(), Config{Dir: t.TempDir(), Accounts: 10_000, Submitters: 2, Duration: 200 * time.Millisecond, Rate: 20_000})
	require.NoError(t, err)
	require.Positive(t, r.Ops)
	require.Positive(t, r.Samples)
	require.LessOrEqual(t, r.CommitP50, r.CommitP999)
	t.Log(r)
}

// TestHarness runs the scenarios; enable with -ledger.bench.
// Data goes to $LEDGER_BENCH_DIR (default: a temp dir).
func TestHarness(t *testing.T) {
	if !*runFull {
		t.Skip("enable with -ledger.bench")
	}
	base := os.Getenv("LEDGER_BENCH_DIR")
	if base == "" {
		base = t.TempDir()
	}
	ws, err := pressure.ParseWaitStrategy(*strategy)
	require.NoError(t, err)
	for _, spec := range strings.Split(*scenarios, ",") {
		var sc Config
		subs, rate, _ := strings.Cut(spec, "@")
		sc.Submitters, err = strconv.Atoi(subs)
		require.NoError(t, err)
		if rate != "" {
			sc.Rate, err = strconv.ParseFloat(rate, 64)
			require.NoError(t, err)
		}
		sc.Duration, sc.WaitStrategy, sc.SnapshotEvery = *duration, ws, *snapEvery
		dir, err := os.MkdirTemp(base, "run")
		require.NoError(t, err)
		sc.Dir = dir
		r, err := Run(context.Background(), sc)
		require.NoError(t, err)
		t.Log(r)
		require.NoError(t, os.RemoveAll(dir))
	}
}
