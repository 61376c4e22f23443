package ledger

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"io"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The soak runs many more trials: make soak passes -ledger.kill-trials.
var killTrials = flag.Int("ledger.kill-trials", 20, "kill -9 trials in TestKill9")

// Must match internal/crashload.
const (
	crashloadAccounts      = 64
	crashloadSnapshotEvery = 2000
	crashloadSegmentSize   = 1 << 20
)

// TestKill9 runs internal/crashload against one directory, SIGKILLs it at a
// random moment, reopens the directory and checks, trial after trial, that
// every transaction the helper saw acknowledged survives exactly as
// acknowledged, no UserRef is applied twice, balances sum to zero and replay
// consistently (Verify), and an acknowledged UserRef is still a Duplicate.
func TestKill9(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "crashload")
	build := exec.Command("go", "build", "-o", bin, "./internal/crashload")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	dir := t.TempDir()
	cfg := Config{Dir: dir, MaxAccounts: crashloadAccounts, SnapshotEvery: crashloadSnapshotEvery, WALRetention: -1, WALSegmentSize: crashloadSegmentSize,
		RingSize: 1024} // not persisted; small rings open faster under -race
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed) // kill points differ every run; the seed names them
	rng := rand.New(rand.NewPCG(seed, 9))
	acked := map[TxID]Result{}
	chk := &killChecker{cfg: cfg, acked: acked, orig: map[uint64]uint64{}}
	var total, beforeReady, maxRecovered int
	for trial := 1; trial <= *killTrials; trial++ {
		cmd := exec.Command(bin, "-dir", dir, "-seed", strconv.FormatUint(rng.Uint64(), 10), "-run", strconv.Itoa(trial))
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		lines := make(chan []byte, 1024)
		go readLines(stdout, lines)
		early := rng.IntN(8) == 0 // sometimes kill during Open (recovery)
		if early {
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
			beforeReady++
		} else {
			select {
			case first, ok := <-lines:
				require.True(t, ok && string(first) == "ready", "helper did not start: %q", first)
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				t.Fatal("helper not ready after a minute")
			}
			time.Sleep(time.Duration(5+rng.IntN(60)) * time.Millisecond) // the kill point: the test's input
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		var trialAcks []Result
		for line := range lines { // closes when the pipe does
			if string(line) == "ready" {
				continue
			}
			var r Result
			require.NoError(t, json.Unmarshal(line, &r), "%q", line)
			trialAcks = append(trialAcks, r)
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal(), "helper died on its own: %v", err)
		for _, r := range trialAcks {
			_, dup := acked[r.ID]
			require.False(t, dup, "tx %d acknowledged twice", r.ID)
			acked[r.ID] = r
		}
		total += len(trialAcks)
		// Full replay checks (Verify) on every 5th and the last trial.
		full := trial%5 == 0 || trial == *killTrials
		maxRecovered = max(maxRecovered, chk.check(t, trialAcks, full))
	}
	t.Logf("kill -9: %d trials (%d during Open), %d acknowledged transactions, 0 lost or duplicated; largest ledger %d tx",
		*killTrials, beforeReady, total, maxRecovered)
}

// readLines sends every complete line; a line cut short by the kill was
// never acknowledged and is dropped.
func readLines(r io.Reader, out chan<- []byte) {
	defer close(out)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		out <- line[:len(line)-1]
	}
}

// killChecker checks a directory after each kill. Transactions at or below
// the previous trial's recovered Committed were durable then and are
// immutable, so the duplicate scan resumes there.
type killChecker struct {
	cfg     Config
	acked   map[TxID]Result
	orig    map[uint64]uint64 // UserRef -> original tx
	scanned uint64
}

// check reopens the directory and checks every property against this
// trial's acknowledgements and a sample of the earlier ones; it returns the
// number of transactions in the ledger.
func (k *killChecker) check(t *testing.T, trialAcks []Result, full bool) int {
	t.Helper()
	l, err := Open(k.cfg)
	require.NoError(t, err)
	x, err := l.Indexes()
	require.NoError(t, err)
	require.True(t, x.Snapshot == x.Committed && x.Committed == x.Computed && x.Computed == x.Sequenced, "%+v", x)
	checkAck := func(want Result) {
		require.LessOrEqual(t, want.ID, x.Committed, "acknowledged tx %d lost", want.ID)
		got, err := l.Result(want.ID)
		require.NoError(t, err)
		if len(want.Entries) == 0 {
			want.Entries = nil
		}
		require.Equal(t, want, got, "tx %d differs from its acknowledgement", want.ID)
	}
	for _, r := range trialAcks {
		checkAck(r)
	}
	checked := 0
	for _, r := range k.acked { // map order: a random sample of older acks, or all
		if !full && checked == 64 {
			break
		}
		checkAck(r)
		checked++
	}
	// Nothing applied twice: every UserRef has at most one original.
	require.NoError(t, scanLedgerWAL(l, k.scanned+1, func(tx *walTx) error {
		if tx.userRef != 0 && tx.fail != Duplicate {
			o, seen := k.orig[tx.userRef]
			require.False(t, seen, "UserRef %d applied twice (tx %d and %d)", tx.userRef, o, tx.id)
			k.orig[tx.userRef] = tx.id
		}
		return nil
	}))
	k.scanned = uint64(x.Committed)
	cfg := k.cfg
	var sum int64
	for _, b := range balances(t, l) {
		if b == noAccount {
			// Killed before any run created them all.
			require.Empty(t, k.acked, "every account was created before the first ack")
			continue
		}
		sum += b
	}
	require.Zero(t, sum)
	// An acknowledged original is still recognised.
	ctx := context.Background()
	resubmitted := 0
	for _, r := range trialAcks {
		if r.UserRef == 0 || r.Fail == Duplicate || resubmitted == 3 {
			continue
		}
		res, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 1, UserRef: r.UserRef}, Committed)
		require.NoError(t, err)
		require.Equal(t, Duplicate, res.Fail)
		require.Equal(t, r.ID, res.DupOf)
		resubmitted++
	}
	x, err = l.Indexes()
	require.NoError(t, err)
	k.scanned = uint64(x.Committed) // the resubmissions are durable too
	require.NoError(t, l.Close())
	if full {
		rep, err := verifyDir(nil, cfg.Dir)
		require.NoError(t, err)
		require.True(t, rep.FromZero || rep.LastTx == 0, "%+v", rep)
	}
	return int(x.Committed)
}
