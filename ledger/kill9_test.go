package ledger

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lanework/lanework/ledger/internal/wal"
	"github.com/stretchr/testify/require"
)

// The soak runs many more trials: make soak passes -ledger.kill-trials.
var killTrials = flag.Int("ledger.kill-trials", 20, "kill -9 trials in TestKill9")

// killCfg is the configuration of the kill test, passed to
// internal/crashload as flags. Segments are the smallest allowed and the
// unacknowledged load fills one in a few group commits, snapshots are
// frequent and both retentions short, so that kills land in segment
// rollovers, in retention's removal of old segments and in the pruning of
// the idempotency index, and Open recovers from each. WALRetention stays
// well above what one trial writes (killUnackedMax plus the acknowledged
// load of at most 65 ms), so that the duplicate scan, which resumes where
// the previous trial's ended, still finds every transaction.
var killCfg = Config{MaxAccounts: 64, SnapshotEvery: 1000, WALRetention: 20_000, WALSegmentSize: 256 << 10,
	DedupWindow: 1024, DedupRetentionTxs: 8192}

// killUnackedMax bounds crashload's unacknowledged load per trial.
const killUnackedMax = 8192

func crashloadArgs(c Config) []string {
	return []string{"-dir", c.Dir,
		"-accounts", strconv.FormatUint(c.MaxAccounts, 10),
		"-snapshot-every", strconv.FormatInt(c.SnapshotEvery, 10),
		"-wal-retention", strconv.FormatInt(c.WALRetention, 10),
		"-segment-size", strconv.FormatInt(c.WALSegmentSize, 10),
		"-dedup-window", strconv.FormatUint(c.DedupWindow, 10),
		"-dedup-retention-txs", strconv.FormatUint(c.DedupRetentionTxs, 10),
		"-unacked-max", strconv.Itoa(killUnackedMax), "-index=" + strconv.FormatBool(c.Index)}
}

// TestKill9 runs internal/crashload against one directory, SIGKILLs it at a
// random moment, reopens the directory and checks, trial after trial, that
// every transaction the helper saw acknowledged survives exactly as
// acknowledged (or, once WAL retention removed it, is still at or below
// Committed), no UserRef is applied twice within the idempotency retention,
// balances sum to zero and replay consistently (Verify), and an
// acknowledged UserRef within the retention is still a Duplicate.
func TestKill9(t *testing.T) { runKill9(t, killCfg, *killTrials) }

// TestKill9Index is TestKill9 with the history index on: besides all that
// TestKill9 checks, every acknowledged transaction it checks is also read
// through the index (LookupTransfers, which reads the blocks' spans from
// the kept WAL segments), the same as acknowledged, including those WAL
// retention has removed from wal/.
func TestKill9Index(t *testing.T) {
	cfg := killCfg
	cfg.Index = true
	runKill9(t, cfg, max(*killTrials/2, 1))
}

func runKill9(t *testing.T, cfg Config, trials int) {
	bin := filepath.Join(t.TempDir(), "crashload")
	build := exec.Command("go", "build", "-o", bin, "./internal/crashload")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	cfg.Dir = t.TempDir()
	args := crashloadArgs(cfg)
	cfg.RingSize = 1024 // not persisted; small rings open faster under -race
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed) // kill points differ every run; the seed names them
	rng := rand.New(rand.NewPCG(seed, 9))
	acked := map[TxID]Result{}
	chk := &killChecker{cfg: cfg, acked: acked, orig: map[uint64]uint64{}}
	var total, beforeReady, maxRecovered, maxGrowth int
	for trial := 1; trial <= trials; trial++ {
		cmd := exec.Command(bin, append(args, "-seed", strconv.FormatUint(rng.Uint64(), 10), "-run", strconv.Itoa(trial))...)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		lines := make(chan []byte, 1<<16)
		go readLines(stdout, lines)
		var trialAcks []Result
		// take handles one line: an acknowledgement is kept, progress
		// ("unacked N": N unacknowledged deposits committed) returned.
		take := func(line []byte) (progress int, ok bool) {
			if n, found := bytes.CutPrefix(line, []byte("unacked ")); found {
				p, err := strconv.Atoi(string(n))
				require.NoError(t, err, "%q", line)
				return p, true
			}
			var r Result
			require.NoError(t, json.Unmarshal(line, &r), "%q", line)
			trialAcks = append(trialAcks, r)
			return 0, false
		}
		// await reads lines until one satisfies done.
		await := func(what string, done func(line []byte) bool) {
			timeout := time.After(time.Minute)
			for {
				select {
				case line, ok := <-lines:
					require.True(t, ok, "helper exited before %s", what)
					if done(line) {
						return
					}
				case <-timeout:
					_ = cmd.Process.Kill()
					t.Fatalf("helper not at %s after a minute", what)
				}
			}
		}
		// The kill point, the test's input: during Open (recovery); a
		// random time into the load; or a random point of the
		// unacknowledged load's progress, which spreads kills over its
		// rollovers and retention on a fast machine and a loaded one alike.
		switch mode := rng.IntN(8); {
		case mode == 0:
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
			beforeReady++
		case mode < 4:
			await("ready", func(line []byte) bool { return string(line) == "ready" })
			time.Sleep(time.Duration(5+rng.IntN(60)) * time.Millisecond)
		default:
			await("ready", func(line []byte) bool { return string(line) == "ready" })
			target := rng.IntN(killUnackedMax)
			await("its kill point", func(line []byte) bool { p, ok := take(line); return ok && p >= target })
			time.Sleep(time.Duration(rng.IntN(4000)) * time.Microsecond)
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		for line := range lines { // closes when the pipe does
			if string(line) != "ready" {
				take(line)
			}
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
		full := trial%5 == 0 || trial == trials
		n := chk.check(t, trialAcks, full)
		maxGrowth = max(maxGrowth, n-maxRecovered)
		maxRecovered = max(maxRecovered, n)
	}
	t.Logf("kill -9: %d trials (%d during Open), %d acknowledged transactions, 0 lost or duplicated; largest ledger %d tx, at most %d tx per trial",
		trials, beforeReady, total, maxRecovered, maxGrowth)
	t.Logf("WAL: the killed runs created %d segments and retention removed %d; %d trials rolled over, %d removed segments, %d left a segment unborn, %d ended in a recycled segment; idempotency: %d refs expired and applied again; %d acknowledged tx no longer in the WAL",
		chk.created, chk.removed, chk.rolled, chk.pruned, chk.unborn, chk.recycled, chk.reapplied, chk.gone)
	require.Positive(t, chk.rolled, "no trial rolled over a segment: the load is too light for the segment size")
	require.Positive(t, chk.pruned, "no trial removed a segment: WAL retention never ran")
	if trials >= 100 && !cfg.Index { // about one trial in eight ends in one; the soak must see some (with the index, none is recycled)
		require.Positive(t, chk.recycled, "no trial ended in a recycled segment: retention never handed one back")
	}
	require.Positive(t, chk.reapplied, "no ref outlived DedupRetentionTxs: the idempotency index was never pruned")
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
	orig    map[uint64]uint64 // UserRef -> original tx (the latest, once one expired)
	scanned uint64
	// What the trials did to the WAL, from its segment files.
	segs                   []wal.Segment // after the previous check
	created, removed       int
	rolled, pruned, unborn int
	recycled               int // trials whose newest segment was a recycled file
	// reapplied counts refs executed again after DedupRetentionTxs; gone,
	// acknowledged transactions WAL retention removed.
	reapplied, gone int
}

// check reopens the directory and checks every property against this
// trial's acknowledgements and a sample of the earlier ones; it returns the
// number of transactions in the ledger.
func (k *killChecker) check(t *testing.T, trialAcks []Result, full bool) int {
	t.Helper()
	k.countSegments(t)
	l, err := Open(k.cfg)
	require.NoError(t, err)
	x, err := l.Indexes()
	require.NoError(t, err)
	require.True(t, x.Snapshot == x.Committed && x.Committed == x.Computed && x.Computed == x.Sequenced, "%+v", x)
	// Retention removes nothing above the persisted snapshot (<= Committed)
	// minus WALRetention.
	kept := x.Committed - min(x.Committed, TxID(k.cfg.WALRetention))
	checkAck := func(want Result) {
		require.LessOrEqual(t, want.ID, x.Committed, "acknowledged tx %d lost", want.ID)
		got, err := l.Result(want.ID)
		if errors.Is(err, ErrNotFound) && want.ID <= kept {
			k.gone++
			delete(k.acked, want.ID) // nothing left to compare it with
			return
		}
		require.NoError(t, err)
		if len(want.Entries) == 0 {
			want.Entries = nil
		}
		require.Equal(t, want, got, "tx %d differs from its acknowledgement", want.ID)
	}
	if k.cfg.Index {
		k.checkIndex(t, l, x.Committed, trialAcks, full)
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
	// Nothing applied twice within the retention: a ref's transactions
	// other than Duplicates are more than DedupRetentionTxs apart, and a
	// Duplicate names the latest of them.
	retain := k.cfg.DedupRetentionTxs
	res, err := scanWAL(&l.cfg, k.scanned+1, func(tx *walTx) error {
		if tx.userRef == 0 {
			return nil
		}
		o, seen := k.orig[tx.userRef]
		if tx.fail == Duplicate {
			require.True(t, seen && tx.dupOf == o, "tx %d: Duplicate of tx %d, the original of ref %d is tx %d", tx.id, tx.dupOf, tx.userRef, o)
			require.LessOrEqual(t, tx.id-o, retain, "tx %d: Duplicate of tx %d, past the retention", tx.id, o)
			return nil
		}
		if seen {
			require.Greater(t, tx.id-o, retain, "UserRef %d applied twice (tx %d and %d)", tx.userRef, o, tx.id)
			k.reapplied++
		}
		k.orig[tx.userRef] = tx.id
		return nil
	})
	require.NoError(t, err)
	require.LessOrEqual(t, res.First, k.scanned+1, "WAL retention removed transactions the duplicate scan had not read: raise killCfg.WALRetention")
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
	// An acknowledged original is still recognised within the retention,
	// and executed again after it: three refs of this trial, two older.
	ctx := context.Background()
	fresh := map[uint64]uint64{} // UserRef -> its re-execution by resubmit
	resubmit := func(r Result) {
		o := k.orig[r.UserRef] // r.ID, or a later execution once r's expired
		if f, ok := fresh[r.UserRef]; ok {
			o = f
		}
		res, err := l.SubmitAndWait(ctx, Deposit{Account: 1, Amount: 1, UserRef: r.UserRef}, Committed)
		require.NoError(t, err)
		if uint64(res.ID)-o <= retain {
			require.Equal(t, Duplicate, res.Fail, "tx %d: ref of tx %d within the retention", res.ID, o)
			require.Equal(t, TxID(o), res.DupOf)
		} else {
			require.NotEqual(t, Duplicate, res.Fail, "tx %d: ref of tx %d past the retention", res.ID, o)
			// Executed anew: a later resubmission of the same ref (the
			// two loops below may pick it twice) is its Duplicate. The
			// next trial's WAL scan updates k.orig.
			fresh[r.UserRef] = uint64(res.ID)
		}
	}
	resubmitted := 0
	for _, r := range trialAcks {
		if r.UserRef != 0 && r.Fail != Duplicate && resubmitted < 3 {
			resubmit(r)
			resubmitted++
		}
	}
	for _, r := range k.acked { // map order: random
		if r.UserRef != 0 && r.Fail != Duplicate && resubmitted < 5 {
			resubmit(r)
			resubmitted++
		}
	}
	x, err = l.Indexes()
	require.NoError(t, err)
	require.NoError(t, l.Close())
	// The resubmissions are durable too; the next scan reads them.
	if full {
		rep, err := verifyDir(nil, cfg.Dir)
		require.NoError(t, err)
		n := len(rep.Snapshots)
		require.True(t, rep.FromZero || rep.LastTx == 0 || (n > 0 && rep.Snapshots[n-1].Replayed), "%+v", rep)
	}
	k.segs, _, err = listSegments(vfs.Default, cfg.Dir)
	require.NoError(t, err)
	return int(x.Committed)
}

// checkIndex reads this trial's acknowledged transactions and a sample of
// the earlier ones (all of them if full) through the index, which keeps
// every transaction (WAL retention removes none of its kept segments):
// each is as acknowledged.
func (k *killChecker) checkIndex(t *testing.T, l *Ledger, committed TxID, trialAcks []Result, full bool) {
	t.Helper()
	want := append([]Result(nil), trialAcks...)
	for _, r := range k.acked { // map order: a random sample, or all
		if !full && len(want) == len(trialAcks)+64 {
			break
		}
		want = append(want, r)
	}
	for len(want) > 0 {
		n := min(len(want), MaxReadLimit)
		ids := make([]TxID, n)
		for i, r := range want[:n] {
			ids[i] = r.ID
		}
		got, info, err := l.LookupTransfers(context.Background(), ids, committed)
		require.NoError(t, err)
		require.GreaterOrEqual(t, info.AsOf, committed)
		for i, w := range want[:n] {
			require.NotNil(t, got[i], "acknowledged tx %d not in the index", w.ID)
			g := *got[i]
			if len(w.Entries) == 0 {
				w.Entries = nil
			}
			if len(g.Entries) == 0 {
				g.Entries = nil
			}
			require.Equal(t, w, g, "tx %d in the index differs from its acknowledgement", w.ID)
		}
		want = want[n:]
	}
}

// countSegments compares the WAL's segment files after a kill with those
// the previous check left: segments the killed process created beyond the
// one its Open started are rollovers, and a higher oldest segment is
// retention at work.
func (k *killChecker) countSegments(t *testing.T) {
	segs, _, err := listSegments(vfs.Default, k.cfg.Dir)
	require.NoError(t, err)
	if len(segs) == 0 {
		return
	}
	var prevNewest, prevOldest uint64
	if n := len(k.segs); n > 0 {
		prevOldest, prevNewest = k.segs[0].Seq, k.segs[n-1].Seq
	}
	newest := segs[len(segs)-1].Seq
	if made := int(newest - prevNewest); made > 0 {
		k.created += made
		if made > 1 {
			k.rolled++
		}
	}
	if prevOldest != 0 && segs[0].Seq > prevOldest {
		k.removed += int(segs[0].Seq - prevOldest)
		k.pruned++
	}
	res, err := wal.Scan(walOptions(&k.cfg, nil, nil), wal.Bounds{}, ^uint64(0), func(wal.Segment, int64, []byte) error { return nil })
	require.NoError(t, err)
	if res.Unborn != "" {
		k.unborn++
	}
	// A recycled newest segment holds an earlier segment's bytes after its
	// own records, where a zero-filled one holds zeros.
	if torn := res.Torn; torn != nil {
		f, err := os.Open(filepath.Join(k.cfg.Dir, walDir, torn.File))
		require.NoError(t, err)
		b := make([]byte, 64)
		n, _ := f.ReadAt(b, torn.Offset+torn.Dropped)
		require.NoError(t, f.Close())
		if !bytes.Equal(b[:n], make([]byte, n)) {
			k.recycled++
		}
	}
}
