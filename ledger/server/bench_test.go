package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"github.com/lanework/lanework/pressure"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/client"
	"github.com/lanework/lanework/ledger/wire"
)

// benchServer serves a durable ledger with default settings (1,000,000
// accounts) on loopback.
func benchServer(b *testing.B) (*Server, func()) {
	return benchServerWith(b, pressure.Balanced)
}

// benchServerWith is benchServer with the ledger's stages waiting by ws.
func benchServerWith(b *testing.B, ws pressure.WaitStrategy) (*Server, func()) {
	return benchServerCfg(b, ws, Config{})
}

// benchServerCfg is benchServerWith with cfg's tokens and TLS.
func benchServerCfg(b *testing.B, ws pressure.WaitStrategy, cfg Config) (*Server, func()) {
	b.Helper()
	l, err := ledger.Open(ledger.Config{Dir: b.TempDir(), WaitStrategy: ws})
	if err != nil {
		b.Fatal(err)
	}
	cfg.Addr, cfg.HTTPAddr, cfg.Logger = "127.0.0.1:0", "off", slog.New(slog.DiscardHandler)
	s, err := New(l, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	return s, func() {
		_ = s.Shutdown(context.Background())
		_ = l.Close()
	}
}

func benchOps(r *rand.Rand, n int) []ledger.Op {
	ops := make([]ledger.Op, n)
	for i := range ops {
		a := 1 + r.Uint64N(ledger.DefaultMaxAccounts-1)
		if i%2 == 0 {
			ops[i] = ledger.Deposit{Account: a, Amount: 1 + r.Uint64N(1000)}
		} else {
			ops[i] = ledger.Transfer{From: a, To: 1 + (a % (ledger.DefaultMaxAccounts - 1)), Amount: 1 + r.Uint64N(100)}
		}
	}
	return ops
}

// BenchmarkBatchSubmitTCP: batches of 4096 random deposits and transfers
// over loopback TCP, 4 batches in flight over 2 connections, each answered
// once durable (Committed). One b.N iteration is one op.
func BenchmarkBatchSubmitTCP(b *testing.B) {
	s, stop := benchServer(b)
	defer stop()
	c, err := client.Dial(context.Background(), s.Addr().String(), client.WithConns(2))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	batchSubmits(b, c)
}

func batchSubmits(b *testing.B, c *client.Client) {
	const batch, inflight = 4096, 4
	pre := make([][]ledger.Op, 16)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range pre {
		pre[i] = benchOps(r, batch)
	}
	var next atomic.Int64
	batches := int64((b.N + batch - 1) / batch)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range inflight {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= batches {
					return
				}
				if _, _, err := c.SubmitBatch(context.Background(), pre[i%int64(len(pre))], ledger.Committed); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	b.ReportMetric(float64(batches*batch)/el.Seconds(), "tx/s")
}

// BenchmarkSubmitWaitP99: single ops, each SubmitAndWait(Committed),
// offered open loop at 20,000 ops/s; latency is measured from each op's
// scheduled send time. "tcp" goes through the server over one pipelined
// loopback connection; "inprocess" calls the ledger directly, as the
// baseline under the same machine load. One b.N iteration is one op.
func BenchmarkSubmitWaitP99(b *testing.B) {
	b.Run("tcp", func(b *testing.B) { tcpWaits(b, pressure.Balanced) })
	// The same over the other strategies: the ledger's stages share the
	// two Ps with the connection goroutines, and how they wait decides
	// how soon a network wakeup gets a P.
	b.Run("tcp-lowlatency", func(b *testing.B) { tcpWaits(b, pressure.LowLatency) })
	b.Run("tcp-lowcpu", func(b *testing.B) { tcpWaits(b, pressure.LowCPU) })
	b.Run("inprocess", func(b *testing.B) {
		l, err := ledger.Open(ledger.Config{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		pacedWaits(b, func(op ledger.Op) error {
			_, err := l.SubmitAndWait(context.Background(), op, ledger.Committed)
			return err
		})
	})
}

func tcpWaits(b *testing.B, ws pressure.WaitStrategy) {
	s, stop := benchServerWith(b, ws)
	defer stop()
	c, err := client.Dial(context.Background(), s.Addr().String(), client.WithConns(1))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	pacedWaits(b, func(op ledger.Op) error {
		_, err := c.SubmitAndWait(context.Background(), op, ledger.Committed)
		return err
	})
}

func pacedWaits(b *testing.B, call func(ledger.Op) error) {
	const rate = 20_000
	interval := time.Second / rate
	lat := make([]time.Duration, b.N)
	r := rand.New(rand.NewPCG(3, 4))
	ops := benchOps(r, 4096)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 200*time.Microsecond {
			time.Sleep(d) // pacing: the offered rate, in steps of a few ops
		}
		wg.Go(func() {
			if err := call(ops[i%len(ops)]); err != nil {
				b.Error(err)
			}
			lat[i] = time.Since(due)
		})
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(lat)
	q := func(f float64) float64 {
		return float64(lat[min(len(lat)-1, int(f*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(0.999), "p999-ms")
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}

func rssBytes(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb * 1024
		}
	}
	b.Skip("no VmRSS")
	return 0
}

// BenchmarkIdleConns: 1,000 connections, each having sent one ping, held
// idle by one server with a default ledger (1,000,000 accounts), all in
// this process. Reports the process RSS and its growth per connection.
// It measures once, whatever b.N.
func BenchmarkIdleConns(b *testing.B) {
	const n = 1000
	{
		debug.FreeOSMemory() // earlier runs' garbage must not count
		s, stop := benchServer(b)
		base := rssBytes(b)
		conns := make([]net.Conn, 0, n)
		e := wire.NewEncoder()
		e.Ping(1)
		for range n {
			nc, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, nc)
			if _, err := nc.Write(e.Bytes()); err != nil {
				b.Fatal(err)
			}
		}
		for _, nc := range conns {
			if _, _, err := wire.NewFrameReader(bufio.NewReader(nc), 0).Next(); err != nil {
				b.Fatal(err)
			}
		}
		if got := s.open.Load(); got != n {
			b.Fatalf("%d connections open, want %d", got, n)
		}
		debug.FreeOSMemory()
		rss := rssBytes(b)
		b.ReportMetric(rss/(1<<20), "rss-MiB")
		b.ReportMetric((rss-base)/n/1024, "KiB/conn")
		for _, nc := range conns {
			nc.Close()
		}
		stop()
	}
}

// BenchmarkLargeFrameConns: 4,096 connections (the default MaxConns) that
// each sent one frame of the default MaxFrame (4 MiB) and went quiet, on a
// server with a default ledger, all in this process. Reports the process
// RSS once they are idle (the bar: under 256 MiB). It measures once,
// whatever b.N.
func BenchmarkLargeFrameConns(b *testing.B) {
	debug.FreeOSMemory()
	s, stop := benchServer(b)
	defer stop()
	conns := sendLargeFrames(b, s.Addr().String(), DefaultMaxConns, wire.DefaultMaxFrame)
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	if got := s.open.Load(); got != DefaultMaxConns {
		b.Fatalf("%d connections open", got)
	}
	debug.FreeOSMemory()
	b.ReportMetric(rssBytes(b)/(1<<20), "rss-MiB")
	b.ReportMetric(float64(s.frameBufs.Lent()), "lent-bytes")
}

// BenchmarkSecureTCP: the batch and submit-and-wait benchmarks of this
// file over a server without tokens and TLS ("plain") and with both
// ("token-tls": a read_write token, TLS 1.3 with a P-256 certificate from
// a test CA). With -count, the two variants alternate, so both see the
// same machine load.
func BenchmarkSecureTCP(b *testing.B) {
	p := newTestPKI(b)
	tcfg, err := LoadTLS(p.certFile, p.keyFile, "")
	if err != nil {
		b.Fatal(err)
	}
	variants := []struct {
		name string
		cfg  Config
		opts []client.Option
	}{
		{"plain", Config{}, nil},
		{"token-tls", Config{Tokens: testTokens, TLS: tcfg},
			[]client.Option{client.WithToken(rwToken), client.WithTLS(&tls.Config{RootCAs: p.pool})}},
	}
	dial := func(b *testing.B, s *Server, opts []client.Option, conns int) *client.Client {
		c, err := client.Dial(context.Background(), s.Addr().String(), append(opts, client.WithConns(conns))...)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	for _, v := range variants {
		b.Run("batch/"+v.name, func(b *testing.B) {
			s, stop := benchServerCfg(b, pressure.Balanced, v.cfg)
			defer stop()
			c := dial(b, s, v.opts, 2)
			defer c.Close()
			batchSubmits(b, c)
		})
	}
	for _, v := range variants {
		b.Run("submit-wait/"+v.name, func(b *testing.B) {
			s, stop := benchServerCfg(b, pressure.Balanced, v.cfg)
			defer stop()
			c := dial(b, s, v.opts, 1)
			defer c.Close()
			pacedWaits(b, func(op ledger.Op) error {
				_, err := c.SubmitAndWait(context.Background(), op, ledger.Committed)
				return err
			})
		})
	}
}
