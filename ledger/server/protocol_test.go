package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/client"
	"github.com/lanework/lanework/ledger/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawConn speaks the protocol by hand.
type rawConn struct {
	t   *testing.T
	nc  net.Conn
	fr  *wire.FrameReader
	dec *wire.Decoder
}

func newRaw(t *testing.T, f *fixture) *rawConn {
	nc := f.raw(t)
	return &rawConn{t: t, nc: nc, fr: wire.NewFrameReader(bufio.NewReader(nc), 0), dec: wire.NewDecoder()}
}

func (r *rawConn) send(b []byte) {
	r.t.Helper()
	_, err := r.nc.Write(b)
	require.NoError(r.t, err)
}

func (r *rawConn) next() (wire.Header, []byte) {
	r.t.Helper()
	require.NoError(r.t, r.nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	h, body, err := r.fr.Next()
	require.NoError(r.t, err)
	return h, body
}

func (r *rawConn) wantError(id uint64, code wire.Code) {
	r.t.Helper()
	h, body := r.next()
	require.Equal(r.t, wire.TypeError, h.Type)
	require.Equal(r.t, id, h.ID)
	we, err := r.dec.Error(body)
	require.NoError(r.t, err)
	require.Equal(r.t, code, we.Code, we.Message)
}

func (r *rawConn) wantClosed() {
	r.t.Helper()
	require.NoError(r.t, r.nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, _, err := r.fr.Next()
	require.Error(r.t, err)
	require.False(r.t, errors.Is(err, os.ErrDeadlineExceeded), "connection not closed: %v", err)
}

func (r *rawConn) ping(id uint64) {
	r.t.Helper()
	e := wire.NewEncoder()
	e.Ping(id)
	r.send(e.Bytes())
	h, _ := r.next()
	require.Equal(r.t, wire.Header{Type: wire.TypePong, ID: id}, h)
}

func lenHeader(n uint32, t wire.Type, id uint64) []byte {
	b := make([]byte, 13)
	binary.BigEndian.PutUint32(b, n)
	b[4] = byte(t)
	binary.BigEndian.PutUint64(b[5:], id)
	return b
}

func TestBadFrames(t *testing.T) {
	f := startServer(t, Config{MaxFrame: 1 << 16})
	good := f.dial(t)
	ctx := context.Background()
	_, err := good.SubmitAndWait(ctx, ledger.Deposit{Account: 1, Amount: 10}, ledger.Committed)
	require.NoError(t, err)

	t.Run("malformed body keeps the connection", func(t *testing.T) {
		r := newRaw(t, f)
		e := wire.NewEncoder()
		e.Raw(wire.TypeBalance, 5, []byte{0xc1}) // 0xc1 is never valid msgpack
		e.Raw(wire.TypeSubmit, 6, []byte{0x92, 0x00, 0xdd, 0x7f, 0xff, 0xff, 0xff})
		e.Raw(wire.TypeSubmitWait, 7, []byte{0x92, 0x03, 0x95, 0x03, 0x01, 0x01, 0x05}) // truncated op
		r.send(e.Bytes())
		r.wantError(5, wire.CodeMalformed)
		r.wantError(6, wire.CodeMalformed)
		r.wantError(7, wire.CodeMalformed)
		r.ping(8)
	})
	t.Run("unknown type keeps the connection", func(t *testing.T) {
		r := newRaw(t, f)
		e := wire.NewEncoder()
		e.Raw(wire.Type(0x42), 9, []byte{0x90})
		e.Raw(wire.TypePong, 10, nil) // a response type sent as a request
		r.send(e.Bytes())
		r.wantError(9, wire.CodeUnknownType)
		r.wantError(10, wire.CodeUnknownType)
		r.ping(11)
	})
	t.Run("invalid op is an input error", func(t *testing.T) {
		r := newRaw(t, f)
		e := wire.NewEncoder()
		e.Submit(12, ledger.Committed, []ledger.Op{ledger.Deposit{Account: 1, Amount: 1}, ledger.Transfer{From: 2, To: 2, Amount: 1}})
		e.SubmitWait(13, ledger.Committed, nil)
		e.SubmitWait(14, ledger.Sequenced, ledger.Deposit{Account: 1, Amount: 1})
		e.Wait(15, 1<<40, ledger.Committed)
		r.send(e.Bytes())
		got := map[uint64]wire.Code{}
		for range 4 {
			h, body := r.next()
			require.Equal(t, wire.TypeError, h.Type)
			we, err := r.dec.Error(body)
			require.NoError(t, err)
			got[h.ID] = we.Code
			if h.ID == 12 {
				assert.Equal(t, 1, we.Index)
			}
		}
		assert.Equal(t, map[uint64]wire.Code{12: wire.CodeSameAccount, 13: wire.CodeMalformed, 14: wire.CodeLevel, 15: wire.CodeNotFound}, got)
	})
	t.Run("oversized frame is refused and closed", func(t *testing.T) {
		r := newRaw(t, f)
		r.send(lenHeader(1<<20, wire.TypeSubmit, 16))
		r.send(make([]byte, 256<<10)) // the body the server will not read
		r.wantError(16, wire.CodeTooLarge)
		r.wantClosed()
	})
	t.Run("too short frame is closed", func(t *testing.T) {
		r := newRaw(t, f)
		r.send([]byte{0, 0, 0, 2, 1, 1})
		r.wantError(0, wire.CodeMalformed)
		r.wantClosed()
	})
	t.Run("truncated frame is dropped", func(t *testing.T) {
		r := newRaw(t, f)
		e := wire.NewEncoder()
		e.Submit(17, ledger.Committed, []ledger.Op{ledger.Deposit{Account: 3, Amount: 1000}})
		b := e.Bytes()
		r.send(b[:len(b)-3])
		require.NoError(t, r.nc.(*net.TCPConn).CloseWrite())
		r.wantClosed()
	})
	// everyone else still works, and nothing acknowledged was lost
	_, err = good.SubmitAndWait(ctx, ledger.Deposit{Account: 1, Amount: 5}, ledger.Snapshot)
	require.NoError(t, err)
	b, err := good.Balance(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(15), b, "batch 12 was refused whole; the truncated frame never ran")
}

func TestPipelinedAndBatch(t *testing.T) {
	f := startServer(t, Config{})
	c := f.dial(t, client.WithConns(1))
	ctx := context.Background()
	const n = 2000
	ids := make(chan ledger.TxID, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			res, err := c.SubmitAndWait(ctx, ledger.Deposit{Account: uint64(1 + i%10), Amount: 1}, ledger.Committed)
			errs <- err
			ids <- res.ID
		}()
	}
	seen := map[ledger.TxID]bool{}
	for range n {
		require.NoError(t, <-errs)
		id := <-ids
		require.False(t, seen[id])
		seen[id] = true
	}
	ops := make([]ledger.Op, 5000)
	for i := range ops {
		ops[i] = ledger.Transfer{From: uint64(1 + i%10), To: uint64(11 + i%10), Amount: 1}
	}
	first, last, err := c.SubmitBatch(ctx, ops, ledger.Snapshot)
	require.NoError(t, err)
	assert.Equal(t, f.base+ledger.TxID(n+1), first)
	assert.Equal(t, f.base+ledger.TxID(n+5000), last)
	for a := uint64(1); a <= 20; a++ {
		b, err := c.Balance(ctx, a)
		require.NoError(t, err)
		// 200 deposits each into 1..10, then 500 transfers each to 11..20:
		// the last 300 fail with insufficient funds
		want := int64(0)
		if a > 10 {
			want = 200
		}
		assert.Equal(t, want, b, "account %d", a)
	}
}

func TestSlowReaderDoesNotBlockOthers(t *testing.T) {
	f := startServer(t, Config{WriteTimeout: 300 * time.Millisecond, MaxInFlight: 64})
	slow := f.raw(t)
	require.NoError(t, slow.(*net.TCPConn).SetReadBuffer(4096))
	// the slow client pipelines requests forever and never reads
	stop := make(chan struct{})
	wrote := make(chan struct{})
	var sent, stalls atomic.Int64 // bytes written; writes that timed out
	go func() {
		defer close(wrote)
		e := wire.NewEncoder()
		for i := range uint64(4096) {
			e.Indexes(i + 1)
		}
		b := e.Bytes()
		for off := 0; ; {
			select {
			case <-stop:
				return
			default:
			}
			_ = slow.SetWriteDeadline(time.Now().Add(time.Second))
			// Resume where a timed-out write stopped: starting over
			// would cut a frame in two and desynchronize the stream
			// (the server then reads garbage, and may close the
			// connection for a bad frame instead).
			n, err := slow.Write(b[off:])
			sent.Add(int64(n))
			off = (off + n) % len(b)
			if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				return // closed by the server
			}
			if err != nil {
				stalls.Add(1)
			}
		}
	}()
	c := f.dial(t)
	ctx := context.Background()
	for i := range 500 {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := c.SubmitAndWait(cctx, ledger.Deposit{Account: 1 + uint64(i%100), Amount: 1}, ledger.Committed)
		cancel()
		require.NoError(t, err)
	}
	// Normally well under a second: on Linux the server gives up about
	// WriteTimeout after the client's buffer is full (TCP_USER_TIMEOUT);
	// elsewhere once the kernel's send buffer is full too, and a write
	// blocks. The bound is generous for loaded CI machines. What the
	// server did is in the failure.
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	var served []string // index requests served, by second
	next := start
	for f.s.m.slowClosed.Load() == 0 {
		now := time.Now()
		if !now.Before(next) {
			served = append(served, strconv.FormatUint(f.s.m.requests[wire.TypeIndexes].Load(), 10))
			next = next.Add(time.Second)
		}
		if now.After(deadline) {
			writer := "still writing"
			select {
			case <-wrote:
				writer = "stopped"
			default:
			}
			t.Fatalf("slow connection not closed in 60 s; index requests served by second: %s; %d bad frames; "+
				"slow client's writer %s, %d bytes sent, %d writes timed out, its socket: %s; server connections:%s",
				strings.Join(served, " "), f.s.m.badFrames.Load(), writer, sent.Load(), stalls.Load(), sockState(slow),
				f.s.connStates())
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	<-wrote
	// the slow connection is gone: reads hit EOF or reset after its buffered data
	_ = slow.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, slow)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "slow connection still open")
}

// A client that sends a burst and never reads is closed about WriteTimeout
// after its answers stop being taken, though they fit in the kernel's send
// buffer and so no write of them ever blocks.
func TestUnreadAnswersClose(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs TCP_USER_TIMEOUT")
	}
	f := startServer(t, Config{WriteTimeout: 300 * time.Millisecond})
	slow := f.raw(t)
	require.NoError(t, slow.(*net.TCPConn).SetReadBuffer(4096))
	e := wire.NewEncoder()
	const n = 8192 // 112 KiB of pings and of pongs: far above the client's buffer, far below the server's
	for i := range uint64(n) {
		e.Ping(i + 1)
	}
	require.NoError(t, slow.SetWriteDeadline(time.Now().Add(10*time.Second)))
	_, err := slow.Write(e.Bytes())
	require.NoError(t, err)
	start := time.Now()
	for f.s.m.slowClosed.Load() == 0 {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("not closed in 10 s; %d pings served; client socket: %s; server connections:%s",
				f.s.m.requests[wire.TypePing].Load(), sockState(slow), f.s.connStates())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("closed %v after the burst was written", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, uint64(n), f.s.m.requests[wire.TypePing].Load())
	require.Eventually(t, func() bool { return f.s.open.Load() == 0 }, 5*time.Second, 10*time.Millisecond)
}

func TestConnectionLimitAndIdle(t *testing.T) {
	f := startServer(t, Config{MaxConns: 2, IdleTimeout: 200 * time.Millisecond})
	a, b := newRaw(t, f), newRaw(t, f)
	a.ping(1)
	b.ping(1)
	over := newRaw(t, f)
	over.wantError(0, wire.CodeBusy)
	over.wantClosed()
	_, err := client.Dial(context.Background(), f.s.Addr().String())
	if err == nil {
		t.Log("dial succeeded; the busy error arrives on the first call")
	}
	// idle connections are closed after IdleTimeout
	a.wantClosed()
	b.wantClosed()
	assert.GreaterOrEqual(t, f.s.m.idleClosed.Load(), uint64(2))
	c := f.dial(t)
	require.Eventually(t, func() bool { return c.Ping(context.Background()) == nil }, 5*time.Second, 10*time.Millisecond)
}

func TestBusyErrorReachesClient(t *testing.T) {
	f := startServer(t, Config{MaxConns: 1})
	first := f.dial(t, client.WithConns(1))
	require.NoError(t, first.Ping(context.Background()))
	second, err := client.Dial(context.Background(), f.s.Addr().String(), client.WithConns(1))
	require.NoError(t, err)
	defer second.Close()
	err = second.Ping(context.Background())
	require.Error(t, err)
	assert.ErrorIs(t, err, client.ErrConnLost)
	assert.ErrorIs(t, err, wire.ErrBusy)
}

func TestServeOnOwnListener(t *testing.T) {
	l, err := ledger.Open(ledger.Config{Dir: t.TempDir(), MaxAccounts: testAccounts})
	require.NoError(t, err)
	defer l.Close()
	s, err := New(l, Config{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	require.Eventually(t, func() bool { return s.Addr() != nil }, 5*time.Second, time.Millisecond)
	c, err := client.Dial(context.Background(), ln.Addr().String())
	require.NoError(t, err)
	require.NoError(t, c.Ping(context.Background()))
	c.Close()
	require.NoError(t, s.Shutdown(context.Background()))
	require.ErrorIs(t, <-served, ErrServerClosed)
	require.ErrorIs(t, s.Start(), ErrServerClosed)
	_, err = New(nil, Config{})
	require.ErrorIs(t, err, ErrConfig)
	_, err = New(l, Config{MaxBatch: 1 << 20})
	require.ErrorIs(t, err, ErrConfig)
}

// TestRandomInputNeverPanics throws random frames (valid headers, random
// bodies) and raw garbage at the server; it must keep serving.
func TestRandomInputNeverPanics(t *testing.T) {
	f := startServer(t, Config{MaxFrame: 1 << 12, ReadTimeout: 200 * time.Millisecond})
	r := rand.New(rand.NewPCG(7, 7))
	var wg sync.WaitGroup
	for i := range 40 {
		body := make([]byte, r.IntN(200))
		for j := range body {
			body[j] = byte(r.Uint32())
		}
		garbage := i%4 == 0
		typ := wire.Type(1 + r.IntN(9))
		wg.Go(func() {
			nc, err := net.Dial("tcp", f.s.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			e := wire.NewEncoder()
			if garbage {
				_, _ = nc.Write(body)
			} else {
				for k := range 20 {
					e.Raw(typ, uint64(k+1), body[:len(body)*k/20])
				}
				_, _ = nc.Write(e.Bytes())
			}
			_ = nc.(*net.TCPConn).CloseWrite()
			_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.Copy(io.Discard, nc)
		})
	}
	wg.Wait()
	c := f.dial(t)
	res, err := c.SubmitAndWait(context.Background(), ledger.Deposit{Account: 9, Amount: 9}, ledger.Committed)
	require.NoError(t, err)
	assert.Equal(t, ledger.OK, res.Fail)
}
