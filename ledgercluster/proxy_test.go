package ledgercluster

import (
	"bufio"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"
)

// link is a TCP proxy to one replica's raft address that a test can cut,
// make lossy or slow:
//
//   - cut: its connections close and new ones are refused;
//   - drop: each raft message (a whole frame: the proxy reads the
//     transport's framing, so loss never corrupts a stream, as TCP would
//     not) is discarded with probability drop;
//   - delay: every frame (every chunk on the way back and on snapshot
//     connections) is held for a random time up to delay, order kept.
type link struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	drop   float64
	delay  time.Duration
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func newLink(tb testing.TB, target string) *link {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	l := &link{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	l.wg.Add(1)
	go l.accept()
	return l
}

func (l *link) addr() string { return l.ln.Addr().String() }

func (l *link) accept() {
	defer l.wg.Done()
	for {
		in, err := l.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", l.target)
		if err != nil {
			in.Close()
			continue
		}
		l.mu.Lock()
		if l.cut {
			l.mu.Unlock()
			in.Close()
			out.Close()
			continue
		}
		l.conns[in], l.conns[out] = struct{}{}, struct{}{}
		l.mu.Unlock()
		l.wg.Add(2)
		go l.forward(out, in, true)
		go l.forward(in, out, false)
	}
}

// faults returns the link's drop probability and a delay to apply now.
func (l *link) faults() (float64, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var d time.Duration
	if l.delay > 0 {
		d = rand.N(l.delay)
	}
	return l.drop, d
}

// forward copies src to dst through a delaying writer; frames, on the
// dialer's side of a message connection, may be dropped.
func (l *link) forward(dst, src net.Conn, framed bool) {
	defer l.wg.Done()
	defer func() { dst.Close(); src.Close() }()
	q := make(chan timedChunk, 1024)
	done := make(chan struct{})
	go func() { // the writer: each chunk when due
		defer close(done)
		for c := range q {
			if w := time.Until(c.due); w > 0 {
				time.Sleep(w) // the delay being simulated
			}
			if _, err := dst.Write(c.b); err != nil {
				src.Close()
				for range q {
				}
				return
			}
		}
	}()
	defer func() { close(q); <-done }()
	send := func(b []byte) {
		_, d := l.faults()
		q <- timedChunk{due: time.Now().Add(d), b: b}
	}
	r := bufio.NewReader(src)
	if framed {
		// The hello: [cluster id][sender][kind][token length][token].
		hello := make([]byte, helloLen+1)
		if _, err := io.ReadFull(r, hello); err != nil {
			return
		}
		token := make([]byte, hello[helloLen])
		if _, err := io.ReadFull(r, token); err != nil {
			return
		}
		send(append(hello, token...))
		framed = hello[16] == connMessages
	}
	for {
		if framed {
			var h [4]byte
			if _, err := io.ReadFull(r, h[:]); err != nil {
				return
			}
			b := make([]byte, 4+binary.LittleEndian.Uint32(h[:]))
			copy(b, h[:])
			if _, err := io.ReadFull(r, b[4:]); err != nil {
				return
			}
			if drop, _ := l.faults(); drop > 0 && rand.Float64() < drop {
				continue
			}
			send(b)
			continue
		}
		b := make([]byte, 32<<10)
		n, err := r.Read(b)
		if n > 0 {
			send(b[:n])
		}
		if err != nil {
			return
		}
	}
}

type timedChunk struct {
	due time.Time
	b   []byte
}

func (l *link) set(drop float64, delay time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop, l.delay = drop, delay
}

func (l *link) setCut(cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = cut
	if cut {
		for c := range l.conns {
			c.Close()
		}
		clear(l.conns)
	}
}

func (l *link) close() {
	l.ln.Close()
	l.setCut(true)
	l.wg.Wait()
}
