package server

import (
	"sync"
	"time"

	"github.com/lanework/lanework/ledger"
	"github.com/lanework/lanework/ledger/wire"
)

// response is one answer waiting for the writer.
type response struct {
	typ         wire.Type
	id          uint64
	err         *wire.Error // set: the answer is a TypeError
	first, last ledger.TxID // TypeSubmitted; first also carries TypeSnapshotTaken's tx
	res         ledger.Result
	bal         int64
	level       ledger.Level
	idx         ledger.Indexes
	scope       Scope                            // TypeWelcome
	acct        ledger.Account                   // TypeAccountIs
	results     []ledger.Result                  // TypeSubmitted of a waited batch
	enc         func(e *wire.Encoder, id uint64) // a read's answer (read.go)
}

// outQueue hands responses to the writer. It grows only as far as the
// answers waiting (at most MaxInFlight), so an idle connection holds no
// buffer.
type outQueue struct {
	mu     sync.Mutex
	q      []response
	closed bool
	sig    chan struct{} // capacity 1: "something to do"
}

func (q *outQueue) push(r response) {
	q.mu.Lock()
	q.q = append(q.q, r)
	q.mu.Unlock()
	select {
	case q.sig <- struct{}{}:
	default:
	}
}

func (q *outQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.sig <- struct{}{}:
	default:
	}
}

// take swaps the queued responses with spare (emptied) and reports whether
// the queue is closed and drained.
func (q *outQueue) take(spare []response) ([]response, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	got := q.q
	q.q = spare[:0]
	return got, q.closed && len(got) == 0
}

// flushAt bounds the bytes encoded before a write.
const flushAt = 256 << 10

// What a writer keeps between bursts: response queues of up to
// keepResponses slots and an encoder buffer of up to keepEncoded bytes;
// larger ones are dropped after the burst. The queues are kept whole up to
// the default MaxInFlight and beyond: regrowing them every burst cost
// submit-and-wait about 400 B/op (BenchmarkSubmitWaitP99 -benchmem with
// 64 slots). An idle connection that had bursts of n answers in flight
// thus keeps about 2 * n * 150 B.
const (
	keepResponses = 4096
	keepEncoded   = 64 << 10
)

// write is the writer loop: it encodes every queued answer, writes them in
// one call per batch under WriteTimeout, and releases their tokens. After
// a failed write it keeps releasing tokens (discarding answers) until the
// queue closes, so the reader never waits on a dead connection.
func (c *conn) write() {
	var enc *wire.Encoder // allocated on first use: idle connections hold none
	var spare []response
	dead := false
	for {
		<-c.out.sig
		for {
			batch, done := c.out.take(spare)
			spare = nil // the queue owns it now; never alias it
			if done {
				return
			}
			if len(batch) == 0 {
				spare = batch
				break
			}
			if enc == nil {
				enc = wire.NewEncoder()
			}
			for i := range batch {
				if !dead {
					encode(enc, &batch[i])
				}
				batch[i] = response{}
				<-c.sem
				if !dead && (enc.Len() >= flushAt || i == len(batch)-1) {
					dead = !c.flush(enc)
				}
			}
			spare = batch
			if cap(spare) > keepResponses {
				spare = nil // do not keep a burst's memory forever
			}
			if enc.Len() == 0 && cap(enc.Bytes()) > keepEncoded {
				enc = nil
			}
		}
	}
}

// flush writes enc's frames; false if the connection is dead.
func (c *conn) flush(enc *wire.Encoder) bool {
	defer enc.Reset()
	now := time.Now()
	_ = c.nc.SetWriteDeadline(now.Add(c.s.cfg.WriteTimeout))
	c.writeFrom.Store(now.UnixNano())
	n, err := c.nc.Write(enc.Bytes())
	c.writeFrom.Store(0)
	c.written.Add(uint64(n))
	if err != nil {
		if isTimeout(err) || unacked(err) {
			c.closeSlow()
		} else {
			c.kill()
		}
		return false
	}
	return true
}

func encode(e *wire.Encoder, r *response) {
	if r.err != nil {
		e.Error(r.id, r.err)
		return
	}
	if r.enc != nil {
		r.enc(e, r.id)
		return
	}
	switch r.typ {
	case wire.TypePong:
		e.Pong(r.id)
	case wire.TypeSubmitted:
		if r.results != nil {
			e.SubmittedResults(r.id, r.first, r.last, r.results)
		} else {
			e.Submitted(r.id, r.first, r.last)
		}
	case wire.TypeResultIs:
		e.ResultIs(r.id, &r.res)
	case wire.TypeWaited:
		e.Waited(r.id)
	case wire.TypeBalanceIs:
		e.BalanceIs(r.id, r.bal)
	case wire.TypeStatusIs:
		e.StatusIs(r.id, r.level)
	case wire.TypeIndexesAre:
		e.IndexesAre(r.id, r.idx)
	case wire.TypeSnapshotTaken:
		e.SnapshotTaken(r.id, r.first)
	case wire.TypeWelcome:
		e.Welcome(r.id, r.scope.String())
	case wire.TypeAccountIs:
		e.AccountIs(r.id, &r.acct)
	}
}
