package client

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
)

// call is one request in flight. The reader goroutine decodes its answer
// into it and closes done.
type call struct {
	want        wire.Type // the response type expected
	done        chan struct{}
	err         error
	first, last ledger.TxID
	res         ledger.Result
	bal         int64
	acct        ledger.Account
	results     []ledger.Result // TypeSubmitted of a waited batch
	level       ledger.Level
	idx         ledger.Indexes
	// read decodes the answer of a read (read.go), on the reader.
	read func(dec *wire.Decoder, body []byte) error
}

// pconn is one pipelined connection.
type pconn struct {
	nc net.Conn

	wmu      sync.Mutex
	enc      *wire.Encoder // frames not yet written
	spare    *wire.Encoder
	flushing bool

	writeTimeout time.Duration // bound on one write; 0: only ctx deadlines
	deadlineSet  bool          // a write deadline is set on nc (owned by the flusher)

	pmu     sync.Mutex
	pending map[uint64]*call
	nextID  uint64
	err     error         // set once, when the connection dies
	dead    chan struct{} // closed when err is set
}

func newPconn(nc net.Conn, maxFrame int, writeTimeout time.Duration) *pconn {
	p := &pconn{nc: nc, enc: wire.NewEncoder(), spare: wire.NewEncoder(), writeTimeout: writeTimeout,
		pending: make(map[uint64]*call), dead: make(chan struct{})}
	go p.read(maxFrame)
	return p
}

func (p *pconn) isDead() bool {
	select {
	case <-p.dead:
		return true
	default:
		return false
	}
}

// die records err as the connection's failure, closes it and fails every
// pending call with it.
func (p *pconn) die(err error) {
	p.pmu.Lock()
	if p.err != nil {
		p.pmu.Unlock()
		return
	}
	p.err = err
	close(p.dead)
	pending := p.pending
	p.pending = nil
	p.pmu.Unlock()
	_ = p.nc.Close()
	for _, c := range pending {
		c.err = err
		close(c.done)
	}
}

// start registers c and returns its request id.
func (p *pconn) start(c *call) (uint64, error) {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	if p.err != nil {
		return 0, p.err
	}
	p.nextID++
	p.pending[p.nextID] = c
	return p.nextID, nil
}

// abandon forgets call id (its context ended); a late answer is dropped.
func (p *pconn) abandon(id uint64) {
	p.pmu.Lock()
	if p.pending != nil {
		delete(p.pending, id)
	}
	p.pmu.Unlock()
}

// send appends one frame with encode and writes it, coalescing with the
// frames of concurrent callers: the first caller becomes the flusher and
// writes everything appended until the buffer stays empty.
//
// Every write has a deadline, so a peer that stops reading cannot block a
// writer forever: now + the write timeout (WithWriteTimeout), or the
// flushing caller's ctx deadline if that is earlier, for the write that
// carries its own frame; now + the write timeout for the frames of others
// it writes after. A write that misses its deadline may have sent part of
// a frame, so the connection dies: every call in flight on it fails with
// ErrConnLost (wrapping os.ErrDeadlineExceeded).
func (p *pconn) send(encode func(*wire.Encoder), ctxDeadline time.Time) {
	p.wmu.Lock()
	encode(p.enc)
	if p.flushing {
		p.wmu.Unlock()
		return
	}
	p.flushing = true
	own := true
	for p.enc.Len() > 0 {
		buf := p.enc
		p.enc, p.spare = p.spare, nil
		p.wmu.Unlock()
		var dl time.Time
		if p.writeTimeout > 0 {
			dl = time.Now().Add(p.writeTimeout)
		}
		if own && !ctxDeadline.IsZero() && (dl.IsZero() || ctxDeadline.Before(dl)) {
			dl = ctxDeadline
		}
		own = false
		var err error
		if !dl.IsZero() || p.deadlineSet {
			err = p.nc.SetWriteDeadline(dl)
			p.deadlineSet = !dl.IsZero()
		}
		if err == nil {
			_, err = p.nc.Write(buf.Bytes())
		}
		buf.Reset()
		p.wmu.Lock()
		p.spare = buf
		if err != nil {
			p.flushing = false
			p.enc.Reset()
			p.wmu.Unlock()
			p.die(fmt.Errorf("%w: write: %w", ErrConnLost, err))
			return
		}
	}
	p.flushing = false
	p.wmu.Unlock()
}

// read is the reader goroutine: it matches answers to calls until the
// connection fails.
func (p *pconn) read(maxFrame int) {
	fr := wire.NewFrameReader(bufio.NewReaderSize(p.nc, 32<<10), maxFrame)
	dec := wire.NewDecoder()
	for {
		h, body, err := fr.Next()
		if err != nil {
			p.die(fmt.Errorf("%w: %w", ErrConnLost, err))
			return
		}
		if h.ID == 0 && h.Type == wire.TypeError {
			// a connection-level error: busy, shutting down, bad frame
			if we, derr := dec.Error(body); derr == nil {
				p.die(fmt.Errorf("%w: %w", ErrConnLost, we))
			} else {
				p.die(fmt.Errorf("%w: %w", ErrConnLost, derr))
			}
			return
		}
		p.pmu.Lock()
		c := p.pending[h.ID]
		delete(p.pending, h.ID)
		p.pmu.Unlock()
		if c == nil {
			continue // abandoned by its caller
		}
		if err := decodeInto(dec, h.Type, body, c); err != nil {
			c.err = err
			close(c.done)
			p.die(fmt.Errorf("%w: %w", ErrConnLost, err))
			return
		}
		close(c.done)
	}
}

// errProtocol reports an answer of the wrong type or shape.
var errProtocol = errors.New("client: protocol violation")

func decodeInto(dec *wire.Decoder, t wire.Type, body []byte, c *call) error {
	if t == wire.TypeError {
		we, err := dec.Error(body)
		if err != nil {
			return fmt.Errorf("%w: %w", errProtocol, err)
		}
		c.err = we.Err()
		return nil
	}
	if t != c.want {
		return fmt.Errorf("%w: got %v, want %v", errProtocol, t, c.want)
	}
	var err error
	switch t {
	case wire.TypePong, wire.TypeWaited:
		err = dec.Empty(body)
	case wire.TypeSubmitted:
		c.first, c.last, c.results, err = dec.SubmittedResults(body)
	case wire.TypeResultIs:
		c.res, err = dec.ResultIs(body)
	case wire.TypeBalanceIs:
		c.bal, err = dec.BalanceIs(body)
	case wire.TypeAccountIs:
		c.acct, err = dec.AccountIs(body)
	case wire.TypeStatusIs:
		c.level, err = dec.StatusIs(body)
	case wire.TypeIndexesAre:
		c.idx, err = dec.IndexesAre(body)
	case wire.TypeSnapshotTaken:
		c.first, err = dec.SnapshotTaken(body)
	default:
		if c.read != nil {
			err = c.read(dec, body)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errProtocol, err)
	}
	return nil
}
