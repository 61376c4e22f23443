package ledger

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/lanework/lanework/ledger/internal/wal"
	"github.com/lanework/lanework/ringbuf"
)

// With the index on, the WAL stage hands the Snapshotter each batch's
// transaction encodings through a byte ring (Ledger.encTx), and the index's
// blocks copy them instead of encoding every transaction a second time.
// The WAL stage commits a batch's bytes before its records, so the
// Snapshotter, which takes the bytes of the records it has, always finds
// them; the ring holds at least two batches, so the WAL stage never waits
// for room that only records it has not yet handed over would free.

// newEncRing returns the ring for batches of up to maxBytes encoded bytes.
func newEncRing(maxBytes int) (*ringbuf.SPSC[byte], error) {
	return ringbuf.NewSPSC[byte](1 << bits.Len(uint(2*maxBytes-1)))
}

// walBatchBytes is the WAL stage's bound on a batch's encoding, header
// room excluded (runWAL).
func walBatchBytes(cfg *Config) int {
	return min(walMaxBytes, wal.MaxBatch(cfg.WALSegmentSize)-maxTxEncoded) - wal.HeaderRoom
}

// handEncodings copies the transactions of a batch (its encoding without
// the header) into the ring; false if the ledger halted while it waited.
// WAL stage only.
func (l *Ledger) handEncodings(p []byte) bool {
	var bo backoff
	for len(p) > 0 {
		dst := l.encTx.Reserve(len(p))
		if len(dst) == 0 {
			if l.halted() {
				return false
			}
			bo.wait()
			continue
		}
		c := copy(dst, p)
		l.encTx.Commit(c)
		p = p[c:]
	}
	return true
}

// stage adds what the blocks need of recs, which the Snapshotter has
// applied, to ix.pend, and their encodings from the ring to ix.raw (each
// one's place to ix.txs). Snapshotter only.
func (ix *indexWriter) stage(ring *ringbuf.SPSC[byte], recs []txRecord) error {
	ix.stageBlockTxs(recs)
	start := uint32(len(ix.raw))
	total := uint32(0)
	at := len(ix.txs)
	ix.txs = slices.Grow(ix.txs, len(recs))[:at+len(recs)]
	txs := ix.txs[at:]
	for i := range recs {
		n := uint32(recs[i].encodedLen())
		txs[i] = rawTx{off: start + total, n: n}
		total += n
	}
	for got := uint32(0); got < total; {
		p := ring.PeekN(int(total - got))
		if len(p) == 0 { // cannot happen: the WAL stage hands the bytes first
			return fmt.Errorf("ledger: index: %d bytes of encodings of tx %d..%d missing", total-got, recs[0].id, recs[len(recs)-1].id)
		}
		ix.raw = append(ix.raw, p...)
		ring.Advance(len(p))
		got += uint32(len(p))
	}
	return nil
}

// commitIndex writes the index of the records staged, and then makes them
// visible to reads (the index's mark). Snapshotter only.
func (l *Ledger) commitIndex(ix *indexWriter) error {
	last := ix.pend[len(ix.pend)-1].id
	if err := ix.write(); err != nil {
		return err
	}
	l.indexed.Store(last)
	l.ixWaits.release(TxID(last))
	return nil
}
