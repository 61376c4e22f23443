// Package bench is the ledger's load harness: it drives a durable ledger
// with random deposits and transfers from a number of submitting goroutines,
// at saturation or at an offered rate, and reports throughput, submit-call
// latency, submit-to-Committed latency and peak RSS. The Go benchmarks of
// package ledger and the CLI's `ledger bench` both run it.
package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/pressure"
)

// Config describes one run. Zero fields take the defaults in brackets.
type Config struct {
	Dir           string                // ledger directory; must not exist or be empty (required)
	Accounts      uint64                // MaxAccounts [1,000,000]
	Submitters    int                   // submitting goroutines [1]
	Duration      time.Duration         // length of the run [10s]
	Rate          float64               // offered tx/s over all submitters; 0 saturates
	TransferShare float64               // share of transfers among ops [0.5]
	WaitStrategy  pressure.WaitStrategy // [Balanced]
	SnapshotEvery int64                 // ledger.Config.SnapshotEvery [its default: snapshots on]
	Index         bool                  // ledger.Config.Index [false: no history and query indexes]
	SampleEvery   int                   // time one call in this many [64 at an offered rate, 1024 at saturation]
	Seed          uint64
	// Progress, if set, is called every ProgressEvery [1s] while the
	// submitters run, from one goroutine of the harness, never after Run
	// returns. It must not block for long: the next call waits for it.
	Progress      func(Progress)
	ProgressEvery time.Duration
	// Stop, if not nil, ends the run early when closed, as if Duration had
	// elapsed: Run waits for what was submitted and reports it.
	Stop <-chan struct{}
}

// Progress is what Config.Progress receives during a run.
type Progress struct {
	Elapsed    time.Duration // since the submitters started
	Committed  uint64        // transactions durable since the run started
	Throughput float64       // durable tx/s since the previous call
	// CommitP50 and CommitP99 are the submit -> Committed latencies of the
	// sampled transactions that committed since the previous call (0 if
	// none did).
	CommitP50, CommitP99 time.Duration
	Stats                ledger.Stats // the ledger's indexes, counters and pressure
}

// Report is the outcome of Run. Latencies are from sampled transactions.
type Report struct {
	Config     Config
	Ops        uint64
	Elapsed    time.Duration // until the last transaction was Committed
	Throughput float64       // durable tx/s
	SubmitP50  time.Duration // one Submit call
	SubmitP99  time.Duration
	CommitP50  time.Duration // Submit to Committed
	CommitP99  time.Duration
	CommitP999 time.Duration
	Samples    int
	PeakRSS    uint64 // bytes (VmHWM of the whole process)
}

func (c *Config) defaults() error {
	if c.Dir == "" {
		return errors.New("bench: Dir is required")
	}
	if c.Accounts == 0 {
		c.Accounts = 1_000_000
	}
	if c.Submitters <= 0 {
		c.Submitters = 1
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if c.TransferShare == 0 {
		c.TransferShare = 0.5
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = time.Second
	}
	if c.SampleEvery <= 0 {
		c.SampleEvery = 64
		if c.Rate == 0 {
			c.SampleEvery = 1024 // enough samples, without a wake-up per 64 tx
		}
	}
	return nil
}

type sample struct {
	id ledger.TxID
	t0 time.Time
}

// Run executes one benchmark run against a fresh ledger in cfg.Dir.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.defaults(); err != nil {
		return Report{}, err
	}
	l, err := ledger.Open(ledger.Config{
		Dir: cfg.Dir, MaxAccounts: cfg.Accounts, WaitStrategy: cfg.WaitStrategy,
		SnapshotEvery: cfg.SnapshotEvery, Index: cfg.Index,
	})
	if err != nil {
		return Report{}, err
	}
	defer l.Close()
	if err := CreateAccounts(ctx, l, cfg.Accounts); err != nil {
		return Report{}, err
	}

	// One tracker goroutine turns sampled ids into submit->Committed
	// latencies. Ids commit in order, so waiting for them one at a time
	// in id order measures each within the wake-up of its batch.
	samples := make(chan sample, 1<<16)
	var latMu sync.Mutex // commitLat, shared with the progress reporter
	var commitLat []time.Duration
	var trackErr error
	trackDone := make(chan struct{})
	go func() {
		defer close(trackDone)
		for s := range samples {
			if err := l.Wait(ctx, s.id, ledger.Committed); err != nil {
				trackErr = err
				for range samples {
				}
				return
			}
			d := time.Since(s.t0)
			latMu.Lock()
			commitLat = append(commitLat, d)
			latMu.Unlock()
		}
	}()

	var (
		wg        sync.WaitGroup
		total     atomic.Uint64
		lastID    atomic.Uint64
		submitLat = make([][]time.Duration, cfg.Submitters)
		errs      = make([]error, cfg.Submitters)
	)
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	for g := range cfg.Submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := submitLoop(ctx, l, &cfg, g, start, deadline, samples, &submitLat[g], &lastID)
			total.Add(n)
			errs[g] = err
		}()
	}
	stopProgress := make(chan struct{})
	var pwg sync.WaitGroup
	if cfg.Progress != nil {
		pwg.Go(func() {
			report(&cfg, l, start, stopProgress, func(since int) ([]time.Duration, int) {
				latMu.Lock()
				defer latMu.Unlock()
				return slices.Clone(commitLat[since:]), len(commitLat)
			})
		})
	}
	wg.Wait()
	close(stopProgress)
	pwg.Wait()
	close(samples)
	if err := errors.Join(errs...); err != nil {
		return Report{}, err
	}
	if err := l.Wait(ctx, ledger.TxID(lastID.Load()), ledger.Committed); err != nil {
		return Report{}, err
	}
	elapsed := time.Since(start)
	<-trackDone
	if trackErr != nil {
		return Report{}, trackErr
	}
	if err := l.Close(); err != nil {
		return Report{}, err
	}
	r := Report{Config: cfg, Ops: total.Load(), Elapsed: elapsed, Samples: len(commitLat)}
	r.Throughput = float64(r.Ops) / elapsed.Seconds()
	all := slices.Concat(submitLat...)
	r.SubmitP50, r.SubmitP99 = quantile(all, 0.50), quantile(all, 0.99)
	r.CommitP50, r.CommitP99, r.CommitP999 = quantile(commitLat, 0.50), quantile(commitLat, 0.99), quantile(commitLat, 0.999)
	r.PeakRSS = peakRSS()
	return r, nil
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false // also for a nil c
	}
}

// report calls cfg.Progress every cfg.ProgressEvery until stop is closed.
// lat returns the commit latencies recorded from index since on, and the
// new total.
func report(cfg *Config, l *ledger.Ledger, start time.Time, stop <-chan struct{}, lat func(since int) ([]time.Duration, int)) {
	t := time.NewTicker(cfg.ProgressEvery)
	defer t.Stop()
	base := l.Stats().Committed
	last, lastCommitted, seen := start, base, 0
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			st := l.Stats()
			d, n := lat(seen)
			seen = n
			p := Progress{Elapsed: now.Sub(start), Committed: st.Committed - base, Stats: st,
				Throughput: float64(st.Committed-lastCommitted) / max(now.Sub(last).Seconds(), 1e-9),
				CommitP50:  quantile(d, 0.50), CommitP99: quantile(d, 0.99)}
			last, lastCommitted = now, st.Committed
			cfg.Progress(p)
		}
	}
}

func submitLoop(ctx context.Context, l *ledger.Ledger, cfg *Config, g int, start, deadline time.Time,
	samples chan<- sample, lat *[]time.Duration, lastID *atomic.Uint64) (uint64, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(g)+1))
	var perG float64 // ops per second per submitter
	if cfg.Rate > 0 {
		perG = cfg.Rate / float64(cfg.Submitters)
	}
	transferCut := uint64(cfg.TransferShare * (1 << 32))
	var n uint64
	var maxID ledger.TxID
	defer func() { atomicMax(lastID, uint64(maxID)) }()
	for {
		if n&255 == 0 {
			now := time.Now()
			if now.After(deadline) || ctx.Err() != nil || closed(cfg.Stop) {
				return n, ctx.Err()
			}
			if perG > 0 { // pace: sleep until op n is due
				due := start.Add(time.Duration(float64(n) / perG * float64(time.Second)))
				if d := due.Sub(now); d > 0 {
					time.Sleep(d)
				}
			}
		}
		var op ledger.Op
		a := 1 + rng.Uint64N(cfg.Accounts-1)
		if rng.Uint64()&(1<<32-1) < transferCut {
			b := 1 + rng.Uint64N(cfg.Accounts-1)
			if b == a {
				b = a%(cfg.Accounts-1) + 1
			}
			op = ledger.Transfer{From: a, To: b, Amount: 1 + rng.Uint64N(100)}
		} else {
			op = ledger.Deposit{Account: a, Amount: 1 + rng.Uint64N(10_000)}
		}
		var id ledger.TxID
		var err error
		if n%uint64(cfg.SampleEvery) == 0 {
			t0 := time.Now()
			id, err = l.Submit(op)
			*lat = append(*lat, time.Since(t0))
			select {
			case samples <- sample{id: id, t0: t0}:
			default: // tracker behind: drop the sample rather than stall
			}
		} else {
			id, err = l.Submit(op)
		}
		if err != nil {
			return n, err
		}
		maxID = max(maxID, id)
		n++
	}
}

// CreateAccounts creates accounts 1 .. n-1 in ledger 1, without limits,
// in batches, and waits until they are committed: the run's ops name them.
// An account that exists already fails with exists, harmlessly.
func CreateAccounts(ctx context.Context, l *ledger.Ledger, n uint64) error {
	ops := make([]ledger.Op, 0, 4096)
	var last ledger.TxID
	for a := uint64(1); a < n; a++ {
		ops = append(ops, ledger.CreateAccount{ID: a, Ledger: 1})
		if len(ops) == cap(ops) || a == n-1 {
			var err error
			if _, last, err = l.SubmitBatch(ops); err != nil {
				return err
			}
			ops = ops[:0]
		}
	}
	if last == 0 {
		return nil
	}
	return l.Wait(ctx, last, ledger.Committed)
}

func atomicMax(a *atomic.Uint64, v uint64) {
	for {
		cur := a.Load()
		if cur >= v || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

// peakRSS returns the process's peak resident set size (VmHWM), or 0 where
// /proc is unavailable.
func peakRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	var kb uint64
	for _, line := range splitLines(string(b)) {
		if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
			return kb << 10
		}
	}
	return 0
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// RecoveryReport is the outcome of Recover.
type RecoveryReport struct {
	Replayed uint64 // transactions replayed from the WAL (Committed at open)
	Elapsed  time.Duration
	Rate     float64 // replayed tx/s
}

// Recover times Open on an existing directory written without snapshots,
// so that Open replays the whole WAL, then closes it.
func Recover(dir string, accounts uint64) (RecoveryReport, error) {
	if accounts == 0 {
		accounts = 1_000_000
	}
	t0 := time.Now()
	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: accounts, SnapshotEvery: -1})
	if err != nil {
		return RecoveryReport{}, err
	}
	el := time.Since(t0)
	x, err := l.Indexes()
	if err != nil {
		return RecoveryReport{}, err
	}
	if err := l.Close(); err != nil {
		return RecoveryReport{}, err
	}
	return RecoveryReport{Replayed: uint64(x.Committed), Elapsed: el, Rate: float64(x.Committed) / el.Seconds()}, nil
}

// String formats r as one line.
func (r Report) String() string {
	rate := "saturation"
	if r.Config.Rate > 0 {
		rate = fmt.Sprintf("%.0f tx/s offered", r.Config.Rate)
	}
	return fmt.Sprintf("submitters=%d %s: %d tx in %v = %.0f tx/s; submit p50=%v p99=%v; commit p50=%v p99=%v p999=%v (%d samples); peak RSS %d MiB",
		r.Config.Submitters, rate, r.Ops, r.Elapsed.Round(time.Millisecond), r.Throughput,
		r.SubmitP50, r.SubmitP99, r.CommitP50, r.CommitP99, r.CommitP999, r.Samples, r.PeakRSS>>20)
}
