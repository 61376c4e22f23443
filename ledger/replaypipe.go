package ledger

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lanework/lanework/ledger/internal/wal"
	"github.com/lanework/lanework/ringbuf"
)

// Open's replay runs on two goroutines: a reader scans the WAL (wal.Scan:
// reading, chunk and batch checksums, the log's rules), chains the batch
// hashes and decodes each batch into groups of up to touchAhead
// transactions; the Open goroutine touches and applies each group in
// order (applyPipeGroup). A plain deposit or transfer crosses to the
// applier as one cache line (replayItem: ids, columns, deltas, values),
// an account creation as that line and its account, any other
// transaction decoded in full (walTx) with its entry bytes copied: the
// applier reads what it applies and nothing else, and the reader decodes
// the common forms without filling a walTx (nextPlain, nextCreate), each
// accepting only what next accepts, byte for byte; replayPlain and
// replayCreate apply them exactly as replayTx would. The groups live in
// a fixed array recycled through an SPSC ring of their indexes, so the
// replay allocates nothing per batch. The result is the sequential replay's: groups apply in log
// order, an apply error stops the reader, and an error the reader meets
// (a decoding error, a Scan refusal) is returned once everything before
// it has applied.

const (
	// Groups in flight: 16,384 transactions, more than a group commit's
	// record holds, so that the applier goes on while the reader reads
	// the next record (Scan hands over whole records). About 7 MB, for
	// the replay's duration.
	replayGroups = 256
	// replayYields: the two goroutines wait for each other by yielding,
	// each on its own core, for this many yields (about a millisecond)
	// before backoff's sleeps: a wait for the other side is short.
	replayYields = 4096
	// groupData holds a group's entry bytes; a transaction's bytes
	// (maxTxData) always fit an empty group.
	groupData = 16 << 10
	maxTxData = 8*maxExpiryPerTx + (MaxLegs+2*maxExpiryPerTx)*entryLen
)

// replayGroup is up to touchAhead transactions of one batch, in items.
// A plain transfer or deposit is its item alone, an account creation its
// item and its account in created, any other transaction its item and its
// walTx in txs, with its entries and expired ids copied into data (the
// scanned payload is valid only during Scan's call).
type replayGroup struct {
	items   [touchAhead]replayItem
	n       int // items
	created [touchAhead]acctMeta
	ncr     int
	txs     [touchAhead]walTx
	ntx     int
	lastTs  int64
	data    [groupData]byte
	// The batch, for errors: its segment, offset and transactions.
	seg         wal.Segment
	off         int64
	first, last uint64
	err         error // a decoding error after items[:n]; nothing follows
	end         bool  // the scan ended (replayPipe.res, .err); no items
}

// replayItem is one transaction of a group, in one cache line: the
// applier of a plain one reads this, never a walTx or the entry bytes.
type replayItem struct {
	id   uint64
	at   int32 // itemCreate: index into created; itemTx: into txs
	form uint8
	// itemPlain: its entries.
	n     uint8
	col   [2]Column
	acct  [2]uint64
	delta [2]int64
	value [2]int64
}

// Item forms.
const (
	itemPlain  = iota // plainTx: no account creation, UserRef, Duplicate, expiry, pending, post or void; at most two entries
	itemCreate        // a successful account creation without UserRef
	itemTx            // any other
)

// errHandedOver stops Scan after the reader handed a decoding error to
// the applier in a group, or after the applier stopped.
var errHandedOver = errors.New("replay: stopped")

type replayPipe struct {
	ring   *ringbuf.SPSC[uint32] // indexes into groups, in log order
	groups *[replayGroups]replayGroup
	stop   atomic.Bool   // set by the applier: it returns an error
	done   chan struct{} // closed when the reader exits
	// The reader's, read by the applier after done.
	res wal.Result
	err error
	// The reader's own.
	next    uint32 // the group the next claim fills
	last    uint64 // the last transaction applied once every batch handed over has
	scratch walTx
	tx      walTx // the transaction being decoded
	// Fixed before the replay: transactions at or below from are skipped,
	// those up to snapEnd replay in the snapshot's window (replayTx).
	from, snapEnd uint64
}

// replayWAL scans the WAL (wal.Scan's rules) and replays every batch after
// rs.last, reading and decoding on a goroutine of its own. It reads only.
func replayWAL(db *pebble.DB, cfg *Config, rs *recovered) error {
	bounds, err := readBounds(db)
	if err != nil {
		return err
	}
	ring, err := ringbuf.NewSPSC[uint32](replayGroups)
	if err != nil {
		return err
	}
	p := &replayPipe{ring: ring, groups: new([replayGroups]replayGroup), done: make(chan struct{}), last: rs.last,
		from: rs.last, snapEnd: rs.snapEnd}
	go p.read(db, cfg, bounds, rs)
	if err := p.apply(rs); err != nil {
		p.stop.Store(true)
		<-p.done
		return err
	}
	<-p.done
	if p.err != nil {
		return walError(p.err)
	}
	return rs.finishScan(p.res)
}

// apply replays the groups in order until the reader's end.
func (p *replayPipe) apply(rs *recovered) error {
	bo := backoff{yields: replayYields}
	for {
		// Peeked, dropped once applied: the reader refills a group only
		// after its index left the ring.
		i := p.ring.Peek()
		if i == nil {
			bo.wait()
			continue
		}
		bo.n = 0
		g := &p.groups[*i]
		if g.end {
			return nil
		}
		err := rs.applyPipeGroup(g)
		if err == nil && g.err == nil {
			p.ring.Drop()
			continue
		}
		var ce *CorruptError
		if err == nil {
			err = g.err
		} else if errors.As(err, &ce) {
			return err // the snapshot's window does not replay
		}
		// The checksums held, so this is no torn write.
		return &CorruptError{File: walDir + "/" + g.seg.Name(), Offset: g.off, FirstTx: TxID(g.first), LastTx: TxID(g.last), Reason: err.Error()}
	}
}

// read is the reader goroutine: Scan, then the end group (unless the
// applier stopped or a decoding error ended the groups).
func (p *replayPipe) read(db *pebble.DB, cfg *Config, bounds wal.Bounds, rs *recovered) {
	defer close(p.done)
	var seq uint64 // the segment being read
	// Every segment is read in full, below the snapshot too: the same
	// rules as Verify, whatever the snapshot covers.
	res, err := wal.Scan(walOptions(cfg, nil, nil), bounds, 0, func(seg wal.Segment, off int64, payload []byte) error {
		if p.stop.Load() {
			return errHandedOver
		}
		b, err := parseBatch(payload) // Scan verified its checksum
		if err != nil {
			return err
		}
		if seg.Seq != seq {
			// The chain continues from what the segment's creation
			// recorded: past the batches retention removed.
			seq = seg.Seq
			if h, ok, err := segmentHash(db, seq); err != nil {
				return err
			} else if ok {
				rs.hash = h
			}
		}
		rs.hash = chainBatch(rs.hash, payload) // replicate.go
		if b.last() <= p.last {
			return nil
		}
		if b.first > p.last+1 {
			return &CorruptError{File: walDir + "/" + seg.Name(), Offset: off, FirstTx: TxID(p.last + 1), LastTx: TxID(b.first - 1), Reason: "transactions missing from the WAL"}
		}
		p.last = b.last()
		return p.decode(&b, seg, off)
	})
	if errors.Is(err, errHandedOver) {
		return
	}
	p.res, p.err = res, err
	if g := p.claim(); g != nil {
		g.end = true
		p.commit()
	}
}

// decode hands b's transactions to the applier in groups.
func (p *replayPipe) decode(b *batchReader, seg wal.Segment, off int64) error {
	for {
		g := p.claim()
		if g == nil {
			return errHandedOver
		}
		g.seg, g.off, g.first, g.last = seg, off, b.first, b.last()
		used := 0
		var err error
		t := &p.tx
		var es [2]Entry
		for g.n < len(g.items) && used <= groupData-maxTxData {
			it := &g.items[g.n]
			if id := b.first + b.i; id > p.from && id > p.snapEnd {
				if id, ts, ok := b.nextPlain(&es); ok {
					g.lastTs = ts
					g.n++
					it.setPlain(id, es[:])
					continue
				}
				if id, ts, ok := b.nextCreate(&g.created[g.ncr]); ok {
					g.lastTs = ts
					g.n++
					it.id, it.form, it.at = id, itemCreate, int32(g.ncr)
					g.ncr++
					continue
				}
			}
			var ok bool
			if ok, err = b.next(t); err != nil || !ok {
				break
			}
			g.lastTs = t.ts
			g.n++
			if p.plainTx(t, it) {
				continue
			}
			it.id, it.form, it.at = t.id, itemTx, int32(g.ntx)
			x := &g.txs[g.ntx]
			*x = *t
			used = x.copyRaw(g.data[:], used)
			g.ntx++
		}
		g.err = err
		more := err == nil && b.i < b.count
		if !more && err == nil && b.off != len(b.data) {
			// The trailing bytes next reports after the last one.
			_, g.err = b.next(&p.scratch)
		}
		p.commit()
		if g.err != nil {
			return errHandedOver
		}
		if !more {
			return nil
		}
	}
}

// plainTx fills it with t if t is plain: after the snapshot's window, no
// account creation, UserRef, Duplicate, expiry, pending transfer, post or
// void, and at most two entries. replayTx would change nothing but those
// entries' cells (and the last id) for it; replayPlain does just that.
func (p *replayPipe) plainTx(t *walTx, it *replayItem) bool {
	if t.id <= p.from || t.id <= p.snapEnd || t.kind == KindCreateAccount || t.userRef != 0 || t.fail == Duplicate ||
		t.nexp != 0 || t.n > len(it.acct) || t.xfer.flags&(Pending|resolving) != 0 {
		return false
	}
	var es [2]Entry
	for i := 0; i < t.n; i++ {
		es[i] = t.entry(i)
	}
	it.setPlain(t.id, es[:t.n])
	return true
}

func (it *replayItem) setPlain(id uint64, es []Entry) {
	for i := range es {
		e := &es[i]
		it.acct[i], it.col[i], it.delta[i], it.value[i] = e.Account, e.Column, e.Delta, e.Value
	}
	it.id, it.form, it.n = id, itemPlain, uint8(len(es))
}

// applyPipeGroup is applyGroup for a group of items: it touches what they
// will read (touchReplay's two rounds: index entries at their homes, then
// the cells through them), then replays them in order.
func (rs *recovered) applyPipeGroup(g *replayGroup) error {
	if g.n == 0 {
		return nil
	}
	rs.lastTs = g.lastTs
	rs.touchReplay(g.txs[:g.ntx])
	items := g.items[:g.n]
	t := rs.accts
	var s uint64
	for i := range items {
		it := &items[i]
		switch it.form {
		case itemPlain:
			for j := uint8(0); j < it.n; j++ {
				s += t.peekHome(it.acct[j])
			}
		case itemCreate:
			s += t.peekHome(g.created[it.at].id)
		}
	}
	for i := range items {
		it := &items[i]
		h := &rs.plainHints[i]
		*h = [2]uint64{}
		for j := uint8(0); j < it.n && it.form == itemPlain; j++ {
			sl, home := t.peekSlot(it.acct[j])
			if home {
				h[j] = sl + 1
			}
			s += uint64(rs.bal[cellsPerAccount*sl].Load())
		}
	}
	rs.sink += s
	for i := range items {
		it := &items[i]
		var err error
		switch it.form {
		case itemPlain:
			err = rs.replayPlain(it, &rs.plainHints[i])
		case itemCreate:
			err = rs.replayCreate(it.id, &g.created[it.at])
		default:
			err = replayTx(&g.txs[it.at], rs, &rs.hints[it.at])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// replayCreate applies a successful account creation without UserRef
// after the snapshot's window (nextCreate) as replayTx would.
func (rs *recovered) replayCreate(id uint64, m *acctMeta) error {
	if id != rs.last+1 {
		return fmt.Errorf("tx %d follows %d", id, rs.last)
	}
	if err := insertRecovered(rs.accts, *m); err != nil {
		return fmt.Errorf("tx %d: %w", id, err)
	}
	rs.last = id
	rs.replayed++
	return nil
}

// replayPlain applies a plain transaction (plainTx) as replayTx would:
// every account must exist, and each entry's resulting value must be its
// cell plus its delta. hint holds the slots plus one the touch found at
// their homes (0: look up).
func (rs *recovered) replayPlain(it *replayItem, hint *[2]uint64) error {
	if it.id != rs.last+1 {
		return fmt.Errorf("tx %d follows %d", it.id, rs.last)
	}
	var cells [2]uint64
	for i := uint8(0); i < it.n; i++ {
		s := hint[i] - 1
		if hint[i] == 0 {
			var ok bool
			if s, ok = rs.accts.slot(it.acct[i]); !ok {
				return fmt.Errorf("tx %d: account %d was never created", it.id, it.acct[i])
			}
		}
		cells[i] = cell(s, it.col[i])
	}
	for i := uint8(0); i < it.n; i++ {
		if cur, ok := rs.applyEntry(cells[i], it.delta[i], it.value[i]); !ok {
			for j := int(i) - 1; j >= 0; j-- {
				rs.store(cells[j], rs.bal[cells[j]].Load()-it.delta[j])
			}
			return entryMismatch(it.id, it.acct[i], it.col[i], cur, it.delta[i], it.value[i])
		}
	}
	rs.last = it.id
	rs.replayed++
	return nil
}

// copyRaw copies t's entry and expired-id bytes into data from used on,
// points t at the copies and returns the new used.
func (t *walTx) copyRaw(data []byte, used int) int {
	if t.expRaw != nil {
		n := copy(data[used:], t.expRaw)
		t.expRaw = data[used : used+n : used+n]
		used += n
	}
	n := copy(data[used:], t.raw)
	t.raw = data[used : used+n : used+n]
	return used + n
}

// claim returns the next group to fill, cleared, waiting while the ring
// is full; nil once the applier stopped.
func (p *replayPipe) claim() *replayGroup {
	bo := backoff{yields: replayYields}
	for p.ring.Len() == p.ring.Cap() {
		if p.stop.Load() {
			return nil
		}
		bo.wait()
	}
	g := &p.groups[p.next]
	g.n, g.ncr, g.ntx, g.err, g.end = 0, 0, 0, nil, false
	return g
}

// commit hands the claimed group to the applier.
func (p *replayPipe) commit() {
	if !p.ring.TryPush(p.next) {
		panic("replay: ring full after claim") // only the reader pushes
	}
	p.next = (p.next + 1) % replayGroups
}

// finishScan checks what Scan found against the replayed state.
func (rs *recovered) finishScan(res wal.Result) error {
	rs.segs, rs.torn, rs.unborn = res.Segments, tornTail(res.Torn), res.Unborn
	if len(res.Segments) == 0 {
		return nil
	}
	if tt := rs.torn; tt != nil && uint64(tt.LastKept) < rs.snapEnd {
		// The snapshot proves the torn record was synced (its manifest was
		// written after every transaction up to its TxEnd was durable):
		// damage, not a torn write.
		return &CorruptError{File: tt.File, Offset: tt.Offset, FirstTx: tt.LastKept + 1, LastTx: TxID(rs.snapEnd),
			Reason: fmt.Sprintf("damaged record covered by snapshot %d, so not a torn write", rs.snapshot)}
	}
	if res.First > rs.last+1 {
		return &CorruptError{File: walDir + "/" + res.Segments[0].Name(), FirstTx: TxID(rs.last + 1), LastTx: TxID(res.First - 1),
			Reason: fmt.Sprintf("transactions missing from the WAL: it starts at tx %d, the snapshot ends at tx %d", res.First, rs.last)}
	}
	if res.Last < rs.last {
		seg := res.Segments[len(res.Segments)-1]
		return &CorruptError{File: walDir + "/" + seg.Name(), FirstTx: TxID(res.Last + 1), LastTx: TxID(rs.last),
			Reason: fmt.Sprintf("the WAL ends at tx %d, before snapshot %d", res.Last, rs.snapshot)}
	}
	return nil
}
