package server

import (
	"bufio"
	"net"
	"runtime"
	"sync"
	"testing"

	"github.com/lanework/lanework/ledger/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sendLargeFrames opens n connections that each send one frame of the
// largest length the server accepts (a balance request whose body does
// not decode), read the malformed answer and stay open, idle.
func sendLargeFrames(tb testing.TB, addr string, n, maxFrame int) []net.Conn {
	tb.Helper()
	e := wire.NewEncoder()
	e.Raw(wire.TypeBalance, 1, make([]byte, maxFrame-wire.HeaderSize))
	frame := e.Bytes()
	conns := make([]net.Conn, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64) // senders at once
	for i := range conns {
		nc, err := net.Dial("tcp", addr)
		require.NoError(tb, err)
		conns[i] = nc
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := nc.Write(frame); err != nil {
				errs <- err
				return
			}
			h, body, err := wire.NewFrameReader(bufio.NewReader(nc), 0).Next()
			if err != nil {
				errs <- err
				return
			}
			we, err := wire.NewDecoder().Error(body)
			if err != nil || h.Type != wire.TypeError || we.Code != wire.CodeMalformed {
				errs <- assert.AnError
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(tb, err)
	}
	return conns
}

func heapInuse() uint64 {
	runtime.GC()
	runtime.GC() // a second cycle clears the pools' victim caches
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestLargeFramesDoNotStay: connections that each sent one maximal frame
// and went quiet hold no large buffer: the server's lent frame memory is
// back to zero, and the heap grew by a few KiB per connection, not by the
// frame size (before bounded buffers it grew by n * maxFrame).
func TestLargeFramesDoNotStay(t *testing.T) {
	const (
		n        = 512
		maxFrame = 1 << 20
	)
	f := startServer(t, Config{MaxFrame: maxFrame, MaxFrameMemory: 8 << 20})
	before := heapInuse()
	conns := sendLargeFrames(t, f.s.Addr().String(), n, maxFrame)
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	require.Equal(t, int64(n), f.s.open.Load())
	assert.Zero(t, f.s.frameBufs.Lent(), "frame memory lent to idle connections")
	grew := int64(heapInuse()) - int64(before)
	t.Logf("heap grew %d KiB for %d connections (%d KiB each)", grew>>10, n, grew/n>>10)
	if raceEnabled {
		return // the race detector's allocator keeps much more per object
	}
	assert.Less(t, grew, int64(n*64<<10), "more than 64 KiB per idle connection")
}

// TestFrameMemoryBudget: frames wider than the budget in total wait
// their turn rather than each taking its own buffer; all are answered.
func TestFrameMemoryBudget(t *testing.T) {
	f := startServer(t, Config{MaxFrame: 1 << 20, MaxFrameMemory: 1 << 20})
	conns := sendLargeFrames(t, f.s.Addr().String(), 32, 1<<20)
	for _, nc := range conns {
		nc.Close()
	}
	assert.Zero(t, f.s.frameBufs.Lent())
}
