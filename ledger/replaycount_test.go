package ledger

import (
	"flag"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

var (
	replayMake = flag.String("ledger.replay-make", "", "TestReplayCount: write 2,000,000 transactions (no snapshot) to this new directory")
	replayOpen = flag.String("ledger.replay-open", "", "TestReplayCount: run recovery (read-only) on this directory")
)

// TestReplayCount is a driver for measuring recovery's replay under
// callgrind, whose instruction counts are repeatable on a loaded machine
// (BenchmarkRecovery's ns/op is not): make the directory once, then count
// one replay of it (docs/ledger.md, Measurements). Without its flags it
// skips.
func TestReplayCount(t *testing.T) {
	if *replayMake == "" && *replayOpen == "" {
		t.Skip("-ledger.replay-make or -ledger.replay-open not set")
	}
	if *replayMake != "" {
		l, err := Open(Config{Dir: *replayMake, MaxAccounts: 1_000_000, SnapshotEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		ops := benchOps(1<<12, 1_000_000)
		for i := 0; i < 2_000_000; i += len(ops) {
			if _, _, err := l.SubmitBatch(ops); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if *replayOpen != "" {
		cfg, err := (&Config{Dir: *replayOpen, MaxAccounts: 1_000_000}).withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		ro, err := openChecked(vfs.Default, cfg.Dir)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		rs, err := recoverState(ro, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		if rs.replayed < 2_000_000 {
			t.Fatalf("replayed %d", rs.replayed)
		}
	}
}
