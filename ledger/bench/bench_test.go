package bench

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lanework/lanework/pressure"
	"github.com/stretchr/testify/assert"
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

// TestHarnessIndex: the ledger the harness runs writes the query index's
// transfer blocks ("z" keys, in the index's own store, index/) only with
// Index.
func TestHarnessIndex(t *testing.T) {
	blocks := func(dir string) int {
		dir = filepath.Join(dir, "index")
		if _, err := os.Stat(dir); err != nil {
			return 0
		}
		db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true})
		require.NoError(t, err)
		defer db.Close()
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{'z'}, UpperBound: []byte{'z' + 1}})
		require.NoError(t, err)
		defer it.Close()
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		return n
	}
	for _, on := range []bool{false, true} {
		dir := t.TempDir()
		r, err := Run(context.Background(), Config{Dir: dir, Accounts: 1_000, Duration: 100 * time.Millisecond, Rate: 20_000, Index: on})
		require.NoError(t, err)
		require.Positive(t, r.Ops)
		if on {
			require.Positive(t, blocks(dir))
		} else {
			require.Zero(t, blocks(dir))
		}
	}
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

// TestHarnessProgress: the progress hook is called during the run with
// growing counts and ordered indexes, and never after Run returns.
func TestHarnessProgress(t *testing.T) {
	var mu sync.Mutex
	var got []Progress
	returned := false
	r, err := Run(context.Background(), Config{Dir: t.TempDir(), Accounts: 10_000, Submitters: 1,
		Duration: 500 * time.Millisecond, Rate: 20_000, ProgressEvery: 50 * time.Millisecond,
		Progress: func(p Progress) {
			mu.Lock()
			defer mu.Unlock()
			assert.False(t, returned, "called after Run returned")
			got = append(got, p)
		}})
	require.NoError(t, err)
	mu.Lock()
	returned = true
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(got), 3, "about ten calls in 500 ms")
	for i, p := range got {
		x := p.Stats.Indexes
		assert.LessOrEqual(t, x.Snapshot, x.Committed)
		assert.LessOrEqual(t, x.Committed, x.Computed)
		assert.LessOrEqual(t, x.Computed, x.Sequenced)
		assert.Positive(t, p.Elapsed)
		assert.GreaterOrEqual(t, p.Throughput, 0.0)
		assert.LessOrEqual(t, p.CommitP50, p.CommitP99)
		if i > 0 {
			assert.GreaterOrEqual(t, p.Committed, got[i-1].Committed)
			assert.Greater(t, p.Elapsed, got[i-1].Elapsed)
		}
	}
	last := got[len(got)-1]
	assert.Positive(t, last.Committed)
	assert.LessOrEqual(t, last.Committed, r.Ops)
	assert.Equal(t, 3, last.Stats.Pressure.Stages)
}

// TestHarnessStop: closing Stop ends a long run early with a report of what
// ran, not an error.
func TestHarnessStop(t *testing.T) {
	stop := make(chan struct{})
	cfg := Config{Dir: t.TempDir(), Accounts: 10_000, Submitters: 2, Duration: time.Minute, Stop: stop}
	cfg.Progress = func(Progress) { // the first report: the run is under way
		select {
		case <-stop:
		default:
			close(stop)
		}
	}
	cfg.ProgressEvery = 100 * time.Millisecond
	r, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Positive(t, r.Ops)
	require.Less(t, r.Elapsed, 30*time.Second)
}
