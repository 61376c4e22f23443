package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// refCheck walks the durable idempotency index alongside verify's WAL
// replay, both in transaction id order, and checks them against each other:
//
//   - every entry of the index names a transaction's own ref: the WAL's
//     transaction of that id has that UserRef and is no Duplicate;
//   - every ref of the WAL (a non-Duplicate transaction with a UserRef)
//     that the index must hold is in it: from the index's first entry on
//     (pruning removes whole runs from the oldest end), from the start the
//     index records (dedupFromKey: an Open with the index off deletes it),
//     up to the newest valid snapshot (the Snapshotter writes a batch's refs
//     before the snapshot that covers it).
//
// Entries below the WAL's first transaction or inside a stretch the replay
// skipped cannot be compared and are passed over; entries after the WAL's
// last transaction are a torn tail's, which Open cuts. Each kind of
// mismatch is one finding, naming the first instance and the count.
type refCheck struct {
	v     *verifier
	it    *pebble.Iterator
	key   []byte      // the current run's key
	rest  []byte      // its entries not yet compared
	prev  uint64      // id of the last entry read
	from  uint64      // first tx the index must hold; 0: none
	upTo  uint64      // last tx the index must hold: the newest valid snapshot's
	order refMismatch // an id at or below its predecessor's
	wrong refMismatch // an entry the WAL contradicts
	lost  refMismatch // a WAL ref missing
}

// refMismatch accumulates one kind of finding: where and what the first
// instance was, and the range and count of all.
type refMismatch struct {
	n           int
	at          loc
	first, last uint64
	text        string
}

func (m *refMismatch) add(at loc, id uint64, format string, args ...any) {
	if m.n == 0 {
		m.at, m.first, m.text = at, id, fmt.Sprintf(format, args...)
	}
	m.n++
	m.last = id
}

func newRefCheck(v *verifier, db *pebble.DB) (*refCheck, error) {
	from, err := readDedupFrom(db)
	if err != nil {
		var ce *CorruptError
		if !errors.As(err, &ce) {
			return nil, err
		}
		v.rep.Findings = append(v.rep.Findings, ce)
	}
	it, err := prefixIter(db, prefixDedup)
	if err != nil {
		return nil, err
	}
	c := &refCheck{v: v, it: it}
	for _, s := range v.snaps {
		c.upTo = max(c.upTo, s.id)
	}
	if it.First() {
		if id, ok := parseIDKey(prefixDedup, it.Key()); ok && from != 0 {
			c.from = max(from, id)
		}
		c.load()
	}
	return c, nil
}

// load decodes the run under the iterator, moving past damaged ones (each a
// finding).
func (c *refCheck) load() {
	for ; c.it.Valid(); c.it.Next() {
		r, err := decodeRun(c.it.Key(), c.it.Value())
		if err != nil {
			c.v.finding(keyLoc(c.it.Key()), r.first, r.last, "dedup index: %v", err)
			continue
		}
		c.key, c.rest = clone(c.it.Key()), r.entries
		return
	}
	c.key, c.rest = nil, nil
}

// peek returns the next entry, checking that ids increase across the index.
func (c *refCheck) peek() (id, ref uint64, ok bool) {
	for {
		if len(c.rest) == 0 {
			if c.key == nil {
				return 0, 0, false
			}
			c.it.Next()
			c.load()
			continue
		}
		id, ref = binary.LittleEndian.Uint64(c.rest), binary.LittleEndian.Uint64(c.rest[8:])
		if c.prev != 0 && id <= c.prev {
			c.order.add(keyLoc(c.key), id, "dedup index lists tx %d after tx %d", id, c.prev)
			c.rest = c.rest[refRunEntry:]
			continue
		}
		return id, ref, true
	}
}

func (c *refCheck) advance() {
	c.prev = binary.LittleEndian.Uint64(c.rest)
	c.rest = c.rest[refRunEntry:]
}

// tx compares transaction t of the WAL, at at, with the index.
func (c *refCheck) tx(t *walTx, at loc) {
	id, ref, ok := c.peek()
	for ok && id < t.id { // below the WAL, or in a stretch the replay skipped
		c.advance()
		id, ref, ok = c.peek()
	}
	isRef := t.userRef != 0 && t.fail != Duplicate
	if ok && id == t.id {
		switch {
		case t.fail == Duplicate:
			c.wrong.add(keyLoc(c.key), id, "dedup index names ref %d for tx %d, a Duplicate of tx %d in the WAL", ref, id, t.dupOf)
		case ref != t.userRef:
			c.wrong.add(keyLoc(c.key), id, "dedup index names ref %d for tx %d, whose ref in the WAL is %d", ref, id, t.userRef)
		}
		c.advance()
		return
	}
	if isRef && c.from != 0 && t.id >= c.from && t.id <= c.upTo {
		c.lost.add(at, t.id, "ref %d of tx %d missing from the dedup index (which holds every ref from tx %d up to snapshot %d)", t.userRef, t.id, c.from, c.upTo)
	}
}

// finish drains the index (decoding every run, as Open would) and records
// the findings.
func (c *refCheck) finish() error {
	for _, _, ok := c.peek(); ok; _, _, ok = c.peek() {
		c.advance()
	}
	for _, m := range []*refMismatch{&c.order, &c.wrong, &c.lost} {
		if m.n > 0 {
			c.v.finding(m.at, m.first, m.last, "%s (%d in all, txs %d..%d)", m.text, m.n, m.first, m.last)
		}
	}
	return c.it.Close()
}
