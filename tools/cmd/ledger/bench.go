package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/bench"
	"github.com/lanework/lanework/ledger/client"
	"github.com/lanework/lanework/pressure"
	"github.com/lanework/lanework/tools/internal/exitcode"
	"github.com/lanework/lanework/tools/internal/interrupt"
	"github.com/lanework/lanework/tools/internal/progress"
)

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure durable throughput and latency, in process or against a server (--addr)",
		Description: "Without --addr, runs the ledger's benchmark harness on a fresh ledger in --dir (a temporary\n" +
			"directory by default, removed afterwards). With --addr, drives a running server over TCP with\n" +
			"random deposits and transfers, --batch ops per submit, each waited for until committed.\n" +
			"On a terminal, a progress bar on stderr shows the last whole interval's rate; the final table\n" +
			"(or --json) goes to stdout. SIGINT or SIGTERM ends the run early: the report covers what ran,\n" +
			"the temporary directory is removed, and the exit status is 130 or 143. Failed calls exit 1.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "addr", EnvVars: []string{"LEDGER_ADDR"}, Usage: "server to drive; empty: in process"},
			&cli.StringFlag{Name: "dir", EnvVars: []string{"LEDGER_BENCH_DIR"}, Usage: "in process: ledger directory, must be new or empty (default: a temporary one)"},
			&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, EnvVars: []string{"LEDGER_BENCH_DURATION"}, Usage: "length of the run"},
			&cli.IntFlag{Name: "submitters", Value: 1, EnvVars: []string{"LEDGER_BENCH_SUBMITTERS"}, Usage: "submitting goroutines (with --addr: concurrent requests)"},
			&cli.Float64Flag{Name: "rate", EnvVars: []string{"LEDGER_BENCH_RATE"}, Usage: "offered tx/s over all submitters; 0 saturates"},
			&cli.Uint64Flag{Name: "accounts", Value: 1_000_000, EnvVars: []string{"LEDGER_BENCH_ACCOUNTS"}, Usage: "accounts the ops pick from (in process: MaxAccounts)"},
			&cli.Float64Flag{Name: "transfer-share", Value: 0.5, EnvVars: []string{"LEDGER_BENCH_TRANSFER_SHARE"}, Usage: "share of transfers among the ops"},
			indexFlag("in process: with the history and query indexes (as serve --index)"),
			disableIndexFlag(),
			&cli.IntFlag{Name: "batch", Value: 1024, EnvVars: []string{"LEDGER_BENCH_BATCH"}, Usage: "with --addr: ops per submit (1: single-op submit-and-wait)"},
			&cli.IntFlag{Name: "conns", Value: 2, EnvVars: []string{"LEDGER_BENCH_CONNS"}, Usage: "with --addr: pooled connections"},
			waitStrategyFlag(),
			&cli.BoolFlag{Name: "json", EnvVars: []string{"LEDGER_JSON"}, Usage: "print the final report as JSON"},
			&cli.DurationFlag{Name: "progress-every", Value: time.Second, EnvVars: []string{"LEDGER_PROGRESS_EVERY"},
				Usage: "interval of the progress bar, shown on a terminal only (0: none)"},
			quietFlag(),
		}, securityFlags()...),
		Action: runBench,
	}
}

// benchReport is the final outcome, in either mode.
type benchReport struct {
	Mode        string        `json:"mode"`
	Ops         uint64        `json:"ops"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	Throughput  float64       `json:"tx_per_second"`
	Batch       int           `json:"batch,omitempty"`
	Submitters  int           `json:"submitters"`
	Rate        float64       `json:"offered_tx_per_second,omitempty"` // --rate; absent: saturation
	SubmitP50   time.Duration `json:"submit_p50_ns,omitempty"`
	SubmitP99   time.Duration `json:"submit_p99_ns,omitempty"`
	CommitP50   time.Duration `json:"commit_p50_ns"`
	CommitP99   time.Duration `json:"commit_p99_ns"`
	CommitP999  time.Duration `json:"commit_p999_ns"`
	PeakRSS     uint64        `json:"peak_rss_bytes,omitempty"`
	Calls       uint64        `json:"calls,omitempty"` // with --addr: submit calls made
	FailedCalls uint64        `json:"failed_calls,omitempty"`
	FirstError  string        `json:"first_error,omitempty"` // of the failed calls
	Interrupted bool          `json:"interrupted,omitempty"` // a signal ended the run early
}

func runBench(c *cli.Context) error {
	if c.NArg() != 0 {
		return exitcode.Usage("bench: unexpected arguments %v", c.Args().Slice())
	}
	if c.Int("submitters") < 1 || c.Int("batch") < 1 || c.Duration("duration") <= 0 {
		return exitcode.Usage("bench: --submitters and --batch must be >= 1, --duration > 0")
	}
	if err := checkIndexFlags(c, "bench"); err != nil {
		return err
	}
	var rep benchReport
	var err error
	if c.String("addr") != "" {
		rep, err = benchRemote(c)
	} else {
		rep, err = benchLocal(c)
	}
	if err != nil {
		return err
	}
	rep.Rate = c.Float64("rate")
	rep.Interrupted = interrupt.Cause(c.Context) != nil
	if c.Bool("json") {
		if err := writeJSON(c.App.Writer, rep); err != nil {
			return err
		}
	} else {
		printReport(c.App.Writer, &rep)
	}
	if e := interrupt.Cause(c.Context); e != nil {
		return e
	}
	if rep.FailedCalls > 0 {
		return cli.Exit(fmt.Sprintf("bench: %d of %d calls failed; the first: %s",
			rep.FailedCalls, rep.Calls, rep.FirstError), 1)
	}
	return nil
}

// showProgress reports whether a progress bar goes to stderr at interval
// every.
func showProgress(c *cli.Context, every time.Duration) bool {
	return every > 0 && !c.Bool("quiet") && progress.IsTerminal(c.App.ErrWriter)
}

func printReport(w io.Writer, r *benchReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "mode\t%s\n", r.Mode)
	fmt.Fprintf(tw, "submitters\t%d\n", r.Submitters)
	if r.Batch > 0 {
		fmt.Fprintf(tw, "batch\t%d\n", r.Batch)
	}
	if r.Rate > 0 {
		fmt.Fprintf(tw, "offered\t%.0f tx/s\n", r.Rate)
	}
	fmt.Fprintf(tw, "ops\t%d\n", r.Ops)
	fmt.Fprintf(tw, "elapsed\t%v\n", r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(tw, "throughput\t%.0f tx/s (durable)\n", r.Throughput)
	if r.SubmitP50 > 0 {
		fmt.Fprintf(tw, "submit call p50 / p99\t%v / %v\n", r.SubmitP50, r.SubmitP99)
	}
	fmt.Fprintf(tw, "to committed p50 / p99 / p99.9\t%v / %v / %v\n", r.CommitP50, r.CommitP99, r.CommitP999)
	if r.PeakRSS > 0 {
		fmt.Fprintf(tw, "peak RSS\t%.1f MiB\n", float64(r.PeakRSS)/(1<<20))
	}
	if r.FailedCalls > 0 {
		fmt.Fprintf(tw, "failed calls\t%d, the first: %s\n", r.FailedCalls, r.FirstError)
	}
	if r.Interrupted {
		fmt.Fprintf(tw, "interrupted\tthe run ended early\n")
	}
	_ = tw.Flush()
}

// benchLocal runs the ledger's harness in process, showing its progress
// reports (durable tx/s and commit latency of the last whole interval,
// index lags, pressure level) beside a bar of the run's duration.
func benchLocal(c *cli.Context) (benchReport, error) {
	ws, err := pressure.ParseWaitStrategy(c.String("wait-strategy"))
	if err != nil {
		return benchReport{}, exitcode.Usage("bench: %v", err)
	}
	dir := c.String("dir")
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ledger-bench-"); err != nil {
			return benchReport{}, err
		}
		defer os.RemoveAll(dir)
	}
	cfg := bench.Config{Dir: dir, Accounts: c.Uint64("accounts"), Submitters: c.Int("submitters"),
		Duration: c.Duration("duration"), Rate: c.Float64("rate"), TransferShare: c.Float64("transfer-share"),
		WaitStrategy: ws, Index: c.Bool("index"), Stop: c.Context.Done()}
	var bar *progress.Bar
	if every := c.Duration("progress-every"); showProgress(c, every) {
		bar = progress.New(c.App.ErrWriter, true, cfg.Duration.Milliseconds(), "starting", every)
		cfg.ProgressEvery = every
		cfg.Progress = func(p bench.Progress) {
			x := p.Stats.Indexes
			bar.Set(p.Elapsed.Milliseconds(), fmt.Sprintf("%.0f tx/s  p50 %v p99 %v  lag seq>cmp %d cmp>com %d com>snap %d  pressure %s",
				p.Throughput, p.CommitP50.Round(time.Microsecond), p.CommitP99.Round(time.Microsecond),
				x.Sequenced-x.Computed, x.Computed-x.Committed, x.Committed-x.Snapshot, p.Stats.Pressure.Level))
		}
	}
	// A signal closes cfg.Stop; the run then drains what it submitted, which
	// must not be cut short by the same cancellation.
	r, err := bench.Run(context.WithoutCancel(c.Context), cfg)
	bar.Done(err == nil && c.Context.Err() == nil) // Run calls Progress from its goroutine, never after it returns
	if err != nil {
		return benchReport{}, err
	}
	return benchReport{Mode: "in-process", Ops: r.Ops, Elapsed: r.Elapsed, Throughput: r.Throughput,
		Submitters: cfg.Submitters, SubmitP50: r.SubmitP50, SubmitP99: r.SubmitP99,
		CommitP50: r.CommitP50, CommitP99: r.CommitP99, CommitP999: r.CommitP999, PeakRSS: r.PeakRSS}, nil
}

// latencies collects per-call latencies (each call waits until committed).
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// snapshot returns the p50, p99 and p99.9 of the samples added since the
// last call with reset, or of all samples.
func (l *latencies) quantiles(since int) (p50, p99, p999 time.Duration, n int) {
	l.mu.Lock()
	s := slices.Clone(l.d[since:])
	n = len(l.d)
	l.mu.Unlock()
	if len(s) == 0 {
		return 0, 0, 0, n
	}
	slices.Sort(s)
	q := func(f float64) time.Duration { return s[min(len(s)-1, int(f*float64(len(s))))] }
	return q(0.50), q(0.99), q(0.999), n
}

// benchRemote drives a server: --submitters goroutines each keep one
// request in flight (a batch, or one op with --batch 1), waited for until
// committed, optionally paced to --rate.
func benchRemote(c *cli.Context) (benchReport, error) {
	// Calls in flight when a signal arrives finish (within the timeout), so
	// the report counts them; the signal only stops new ones (run).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Context), c.Duration("duration")+30*time.Second)
	defer cancel()
	opts, err := clientOptions(c)
	if err != nil {
		return benchReport{}, err
	}
	cl, err := client.Dial(ctx, c.String("addr"), append(opts, client.WithConns(c.Int("conns")))...)
	if err != nil {
		return benchReport{}, err
	}
	defer cl.Close()
	subs, batch, accounts := c.Int("submitters"), c.Int("batch"), max(c.Uint64("accounts"), 3)
	share, rate := c.Float64("transfer-share"), c.Float64("rate")
	if err := createRemoteAccounts(c.Context, cl, accounts); err != nil {
		return benchReport{}, err
	}
	var ops, calls, failed atomic.Uint64
	var lat latencies
	// A refused op (an *InputError: its account is above the server's
	// MaxAccounts, say) would be refused in every call: the run stops at
	// the first and reports it instead of counting failures.
	var firstErr atomic.Pointer[error]
	run, stopRun := context.WithCancel(c.Context)
	defer stopRun()
	deadline := time.Now().Add(c.Duration("duration"))
	start := time.Now()
	var wg sync.WaitGroup
	for g := range subs {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), uint64(start.UnixNano())))
			buf := make([]ledger.Op, batch)
			var interval time.Duration
			if rate > 0 {
				interval = time.Duration(float64(time.Second) * float64(batch) * float64(subs) / rate)
			}
			next := time.Now()
			for time.Now().Before(deadline) && run.Err() == nil {
				if interval > 0 {
					if d := time.Until(next); d > 0 {
						time.Sleep(d) // pacing the offered load
					}
					next = next.Add(interval)
				}
				for i := range buf {
					buf[i] = randomOp(r, accounts, share)
				}
				t0 := time.Now()
				var err error
				if batch == 1 {
					_, err = cl.SubmitAndWait(ctx, buf[0], ledger.Committed)
				} else {
					_, _, err = cl.SubmitBatch(ctx, buf, ledger.Committed)
				}
				calls.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					var ie *ledger.InputError
					if errors.As(err, &ie) {
						stopRun()
					}
					if run.Err() != nil {
						return
					}
					continue
				}
				lat.add(time.Since(t0))
				ops.Add(uint64(batch))
			}
		})
	}
	stop := make(chan struct{})
	var pg sync.WaitGroup
	if every := c.Duration("progress-every"); showProgress(c, every) {
		bar := progress.New(c.App.ErrWriter, true, c.Duration("duration").Milliseconds(), "starting", every)
		pg.Go(func() { remoteProgress(bar, every, cl, &ops, &lat, start, stop) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	pg.Wait()
	var ie *ledger.InputError
	if e := firstErr.Load(); e != nil && errors.As(*e, &ie) {
		return benchReport{}, fmt.Errorf("bench: the server refused the ops (is --accounts %d above its MaxAccounts?): %w", accounts, *e)
	}
	p50, p99, p999, _ := lat.quantiles(0)
	rep := benchReport{Mode: "tcp " + c.String("addr"), Ops: ops.Load(), Elapsed: elapsed,
		Throughput: float64(ops.Load()) / elapsed.Seconds(), Batch: batch, Submitters: subs,
		CommitP50: p50, CommitP99: p99, CommitP999: p999, Calls: calls.Load(), FailedCalls: failed.Load()}
	if e := firstErr.Load(); e != nil {
		rep.FirstError = (*e).Error()
	}
	return rep, nil
}

// createRemoteAccounts creates accounts 1 .. n-1 on the server (an account
// that exists fails with exists, harmlessly) and stops at the first batch
// the server has no room for (accounts_limit_reached: its MaxAccounts is
// smaller), with an error saying so.
func createRemoteAccounts(ctx context.Context, cl *client.Client, n uint64) error {
	ops := make([]ledger.Op, 0, 1024)
	for a := uint64(1); a < n; a++ {
		ops = append(ops, ledger.CreateAccount{ID: a, Ledger: 1})
		if len(ops) < cap(ops) && a < n-1 {
			continue
		}
		level := ledger.Computed
		if a == n-1 {
			level = ledger.Snapshot // the last batch: visible to the run's ops
		}
		res, err := cl.SubmitBatchResults(ctx, ops, level)
		if err != nil {
			return fmt.Errorf("bench: create accounts: %w", err)
		}
		for _, r := range res {
			if r.Fail == ledger.AccountsLimitReached {
				return fmt.Errorf("bench: the server refused the ops: it has no room for --accounts %d accounts (is it above its MaxAccounts?): tx %d: %v", n, r.ID, r.Fail)
			}
		}
		ops = ops[:0]
	}
	return nil
}

func randomOp(r *rand.Rand, accounts uint64, share float64) ledger.Op {
	a := 1 + r.Uint64N(accounts-1)
	if r.Float64() < share {
		b := 1 + r.Uint64N(accounts-1)
		if b == a {
			b = 1 + a%(accounts-1)
		}
		return ledger.Transfer{From: a, To: b, Amount: 1 + r.Uint64N(100)}
	}
	return ledger.Deposit{Account: a, Amount: 1 + r.Uint64N(1000)}
}

// remoteProgress moves bar every interval with the throughput and latency
// of that interval and the server's index lags. When the run ends it closes
// the bar without a last rate: the time since the last tick is a partial
// interval, and the report has the whole run's numbers.
func remoteProgress(bar *progress.Bar, every time.Duration, cl *client.Client, ops *atomic.Uint64, lat *latencies,
	start time.Time, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	last, lastOps, lastN := start, uint64(0), 0
	for {
		select {
		case <-stop:
			bar.Done(time.Since(start) >= time.Duration(bar.Total())*time.Millisecond)
			return
		case now := <-t.C:
			n := ops.Load()
			p50, p99, _, cnt := lat.quantiles(lastN)
			lastN = cnt
			desc := fmt.Sprintf("%.0f tx/s  p50 %v p99 %v", float64(n-lastOps)/now.Sub(last).Seconds(),
				p50.Round(time.Microsecond), p99.Round(time.Microsecond))
			last, lastOps = now, n
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			if x, err := cl.Indexes(ctx); err == nil {
				desc += fmt.Sprintf("  lag seq>cmp %d cmp>com %d com>snap %d", x.Sequenced-x.Computed,
					x.Computed-x.Committed, x.Committed-x.Snapshot)
			}
			cancel()
			bar.Set(now.Sub(start).Milliseconds(), desc)
		}
	}
}
