package ledger

import (
	"fmt"

	"github.com/lanework/lanework/ledger/internal/wal"
	"github.com/lanework/lanework/ringbuf"
)

// With the index on, the WAL stage hands the Snapshotter one walRef per
// batch it appended (Ledger.walRefs): the record's segment and offset,
// its last transaction and base timestamp. The index's blocks refer to
// the record (indexblock.go); each transaction's payload offset in it is
// the sum of encodedLen of those before it in the batch, so nothing is
// copied or encoded a second time. The WAL stage hands a batch's
// descriptor before its records, so the Snapshotter, which takes the
// descriptors of the records it has, always finds them. Every descriptor
// in the ring is of a batch whose first record the Snapshotter has not
// staged, each with at least one record in toSnap or about to enter it:
// a ring of twice toSnap's size never fills.

// newRefRing returns the ring for a pipeline of rings of ringSize.
func newRefRing(ringSize int) (*ringbuf.SPSC[walRef], error) {
	return ringbuf.NewSPSC[walRef](2 * ringSize)
}

// handRef hands the Snapshotter the descriptor of the batch just
// appended; false if the ledger halted while it waited. WAL stage only.
func (l *Ledger) handRef(r walRef) bool {
	var bo backoff
	for {
		if dst := l.walRefs.Reserve(1); len(dst) > 0 {
			dst[0] = r
			l.walRefs.Commit(1)
			return true
		}
		if l.halted() {
			return false
		}
		bo.wait()
	}
}

// stage adds what the blocks need of recs, which the Snapshotter has
// applied, to ix.pend: each one's record (from the ring) and payload
// range in it. Snapshotter only.
func (ix *indexWriter) stage(ring *ringbuf.SPSC[walRef], recs []txRecord) error {
	pend := ix.stageBlockTxs(recs)
	var ref uint32
	for i := range recs {
		r := &recs[i]
		if r.id > ix.cur.last {
			d := ring.PeekN(1)
			if len(d) == 0 { // cannot happen: the WAL stage hands it first
				return fmt.Errorf("ledger: index: the WAL record of tx %d missing", r.id)
			}
			ix.cur, ix.curOff = d[0], wal.HeaderRoom+batchHeaderLen
			ring.Advance(1)
			ref = ix.refFor(&ix.cur)
		} else if i == 0 {
			ref = ix.refFor(&ix.cur)
		}
		n := uint32(r.encodedLen())
		pend[i].ref, pend[i].off, pend[i].n = ref, ix.curOff, n
		ix.curOff += n
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
