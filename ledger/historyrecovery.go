package ledger

import (
	"encoding/binary"
	"errors"
	"log"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lanework/lanework/ledger/internal/wal"
)

// indexPrefixes are the prefixes of every index key (historyindex.go),
// the blocks of builds before included: range deletions drop those too.
var indexPrefixes = [...]byte{prefixBlock, prefixBlockTime, prefixTxPosting, prefixHistory, prefixAcctPosting, prefixBlockBefore}

// catchUpStats is what Open did to bring the index to the recovered state.
type catchUpStats struct {
	txs  uint64        // transactions replayed into the index
	cut  uint64        // transactions cut from it (a torn tail's)
	took time.Duration // time the catch-up (or cut, or restart) took
	// restarted: the index was dropped and begun afresh at the recovered
	// state (the WAL no longer held what it lacked).
	restarted bool
}

// openIndex makes the index hold exactly the transactions up to rs.last
// and returns its writer for the Snapshotter, or nil with the index off.
// Open calls it once the directory may be written and the state is
// recovered. The index's unsynced batches reach some transaction I: the
// WAL after I is replayed into it, or what is above rs.last (a torn tail
// dropped, a log cut by ledger recover) is cut from it.
func openIndex(db *pebble.DB, cfg *Config, rs *recovered) (*indexWriter, catchUpStats, error) {
	var cs catchUpStats
	if !cfg.Index {
		// The index stays as it is, unserved (reads fail with
		// ErrIndexOff): an Open with it on catches up from where it
		// stopped, or restarts it if the WAL no longer reaches back there.
		// A damaged state record waits for that Open too.
		if last, ok := peekIndexState(cfg); ok {
			log.Printf("ledger: %s: the history index (through tx %d) is off in this run: not updated, not served; an Open with Config.Index catches it up or restarts it", cfg.Dir, last)
		}
		return nil, cs, nil
	}
	t0 := time.Now()
	legacy, err := dropLegacyIndex(db)
	if err != nil {
		return nil, cs, err
	}
	ixdb, err := openIndexStore(cfg)
	if err != nil {
		return nil, cs, err
	}
	ix := newIndexWriter(ixdb, newKeptSegments(cfg), rs.accts, cfg.MaxAccounts)
	// Every live segment kept before the catch-up, whose blocks refer to
	// them by name.
	if err := keepLive(cfg, rs.segs); err != nil {
		ix.b.Close()
		return nil, cs, errors.Join(err, closeIndexStore(ixdb), ix.kept.close())
	}
	if legacy {
		// The index moved to its own store: whatever that holds is
		// dropped with the ledger store's copy, and built again.
		log.Printf("ledger: %s: the history index moves from the ledger's store to %s/: rebuilding it from the WAL", cfg.Dir, indexDir)
		err = ix.rebuild(cfg, rs, &cs)
	} else {
		err = ix.bringUp(cfg, rs, &cs)
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		// The index is derived data: a damaged record of it costs a
		// rebuild from the WAL, never the ledger.
		log.Printf("ledger: %s: history index damaged (%v): rebuilding it from the WAL", cfg.Dir, err)
		ix.b.Reset()
		cs = catchUpStats{}
		err = ix.rebuild(cfg, rs, &cs)
	}
	if err != nil {
		ix.b.Close()
		return nil, cs, errors.Join(err, closeIndexStore(ixdb), ix.kept.close())
	}
	cs.took = time.Since(t0)
	return ix, cs, nil
}

// peekIndexState reads the mark of an index that is off in this run, if
// its store exists and opens.
func peekIndexState(cfg *Config) (last uint64, ok bool) {
	dir := cfg.FS.PathJoin(cfg.Dir, indexDir)
	if _, err := cfg.FS.Stat(dir); err != nil {
		return 0, false
	}
	opts := indexStoreOptions(cfg)
	opts.ReadOnly = true
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return 0, false
	}
	defer db.Close()
	_, last, ok, err = readIndexState(db)
	return last, ok && err == nil
}

// followerWALFloor is the first transaction a follower with cfg.Index
// keeps in its WAL: the one after its index's mark, from which the index
// catches up once the replica opens as a leader (1 without a mark).
func followerWALFloor(cfg *Config) (uint64, error) {
	ixdb, err := openIndexStore(cfg)
	if err != nil {
		return 0, err
	}
	before, err := blocksBefore(ixdb)
	var last uint64
	var ok bool
	if err == nil {
		_, last, ok, err = readIndexState(ixdb)
	}
	if cerr := ixdb.Close(); err == nil {
		err = cerr
	}
	var ce *CorruptError
	if errors.As(err, &ce) || !ok || before {
		return 1, nil // the catch-up rebuilds a damaged index, or one of builds before, from the first transaction
	}
	if err != nil {
		return 0, err
	}
	return last + 1, nil
}

// bringUp brings the index to rs.last from the state it finds.
func (ix *indexWriter) bringUp(cfg *Config, rs *recovered, cs *catchUpStats) error {
	before, err := blocksBefore(ix.db)
	if err != nil {
		return err
	}
	if before {
		log.Printf("ledger: %s: the history index keeps its blocks under %q, as builds before this one did: rebuilding it from the WAL", cfg.Dir, prefixBlockBefore)
		return ix.rebuild(cfg, rs, cs)
	}
	from, last, ok, err := readIndexState(ix.db)
	if err != nil {
		return err
	}
	if !ok {
		// No index batch ever reached the disk: a directory from before
		// the index, or a crash lost the first ones.
		return ix.rebuild(cfg, rs, cs)
	}
	ix.from, ix.last = from, last
	switch {
	case last > rs.last:
		cs.cut = last - rs.last
		return ix.cut(rs)
	}
	// The last block is read through: an index whose kept segments are
	// gone or damaged is found here (and rebuilt), not by the first read.
	if err := ix.checkLastBlock(); err != nil {
		return err
	}
	if last < rs.last {
		return ix.catchUpOrRestart(cfg, rs, cs)
	}
	if err := ix.b.Set(indexStateKey, encodeIndexState(ix.from, ix.last), nil); err != nil {
		return err
	}
	return ix.commit()
}

// checkLastBlock reads the index's last block through its reference.
func (ix *indexWriter) checkLastBlock() error {
	it, err := prefixIter(ix.db, prefixBlock)
	if err != nil {
		return err
	}
	defer it.Close()
	if !it.Last() {
		return it.Error()
	}
	var b block
	if err := b.decode(it.Key(), it.Value()); err != nil {
		return err
	}
	return b.load(ix.kept)
}

// blocksBefore reports whether the index's store holds blocks under the
// prefix of builds before (prefixBlockBefore). Such an index's postings and
// time keys name blocks this build does not read, and its mark (the last
// block's end) is not found: it is rebuilt.
func blocksBefore(db *pebble.DB) (bool, error) {
	it, err := prefixIter(db, prefixBlockBefore)
	if err != nil {
		return false, err
	}
	found := it.First()
	return found, errors.Join(it.Error(), it.Close())
}

// rebuild drops every index key and builds the index from the first
// transaction, if the WAL still holds it (else from rs.last on).
func (ix *indexWriter) rebuild(cfg *Config, rs *recovered, cs *catchUpStats) error {
	ix.hpend, ix.henc, ix.pend, ix.refs, ix.raw = ix.hpend[:0], ix.henc[:0], ix.pend[:0], ix.refs[:0], ix.raw[:0]
	if err := pruneKept(cfg, rs.segs); err != nil {
		return err
	}
	// A new store has nothing to drop: range tombstones in its memtable
	// would only cost its flushes.
	if nonEmpty, err := hasKeys(ix.db); err != nil || nonEmpty {
		if err != nil {
			return err
		}
		for _, p := range indexPrefixes {
			if err := ix.b.DeleteRange([]byte{p}, prefixEnd(p), nil); err != nil {
				return err
			}
		}
	}
	ix.from, ix.last = 1, 0
	return ix.catchUpOrRestart(cfg, rs, cs)
}

// catchUpOrRestart replays the WAL after ix.last into the index, or
// restarts the index at rs.last if the WAL no longer reaches back there.
func (ix *indexWriter) catchUpOrRestart(cfg *Config, rs *recovered, cs *catchUpStats) error {
	if ix.last >= rs.last {
		if err := ix.b.Set(indexStateKey, encodeIndexState(ix.from, ix.last), nil); err != nil {
			return err
		}
		return ix.commit()
	}
	cs.txs = rs.last - ix.last
	gap, err := ix.catchUp(cfg, rs)
	if err != nil || !gap {
		return err
	}
	log.Printf("ledger: %s: the history index reaches tx %d, the WAL starts after it: index restarted at tx %d", cfg.Dir, ix.last, rs.last+1)
	cs.txs, cs.restarted = 0, true
	if err := pruneKept(cfg, rs.segs); err != nil {
		return err
	}
	return ix.restart(rs)
}

// restart drops every index key and starts the index after rs.last: the
// columns of each History account then, as an opening record, and the
// postings of every account (creation tx and timestamp unknown: 0).
func (ix *indexWriter) restart(rs *recovered) error {
	// The mark goes first: a crash before the last commit below leaves a
	// directory without one, which the next Open rebuilds.
	if err := ix.b.Delete(indexStateKey, nil); err != nil {
		return err
	}
	for _, p := range indexPrefixes {
		if err := ix.b.DeleteRange([]byte{p}, prefixEnd(p), nil); err != nil {
			return err
		}
	}
	cells := liveCells(rs.bal)
	for s := uint64(1); s < rs.accts.n; s++ {
		if s%4096 == 0 { // bounded batches, for millions of accounts
			if err := ix.commit(); err != nil {
				return err
			}
		}
		m := rs.accts.meta[s]
		if err := ix.accountPostings(s, m, 0, 0); err != nil {
			return err
		}
		if !ix.hasHistory(s) {
			continue
		}
		ix.val = appendHistHeader(ix.val[:0], histOpening, 0, cells, s)
		sealInPlace(ix.val)
		if err := ix.b.Set(historyKey(ix.key[:0], m.id, rs.last), ix.val, nil); err != nil {
			return err
		}
	}
	ix.from, ix.last = rs.last+1, rs.last
	if err := ix.b.Set(indexStateKey, encodeIndexState(ix.from, ix.last), nil); err != nil {
		return err
	}
	return ix.commit()
}

// tailCells are the cells of History accounts during a catch-up.
type tailCells map[uint64]int64

func (c tailCells) load(i uint64) int64 { return c[i] }

// errGap stops a catch-up whose WAL starts after the index's end.
var errGap = errors.New("the WAL starts after the index")

// catchUp replays the WAL after ix.last into the index, in one pass. Only
// History accounts need their slots (a map, not the account table: the
// rest of the entries are never probed) and their columns: each one's are
// those of its last history record at or before ix.last (zero if none)
// until the replay changes them. It returns gap=true, writing nothing, if
// the WAL does not start by ix.last+1.
func (ix *indexWriter) catchUp(cfg *Config, rs *recovered) (gap bool, err error) {
	from := ix.last + 1
	flagged := map[uint64]uint64{} // account id -> slot
	for s := uint64(1); s < rs.accts.n; s++ {
		if ix.hasHistory(s) {
			flagged[rs.accts.meta[s].id] = s
		}
	}
	cells := tailCells{}
	seeded := map[uint64]bool{}
	recs := make([]txRecord, 0, snapshotterRun)
	pos := make([]txPos, 0, snapshotterRun)
	var t walTx
	first := uint64(0)
	_, err = wal.Scan(walOptions(cfg, nil, nil), wal.Bounds{}, from, func(seg wal.Segment, off int64, p []byte) error {
		b, err := parseBatch(p) // Scan verified its checksum
		rec := walRef{seq: seg.Seq, segFirst: seg.First, off: recordStart(off), last: b.last(), base: b.base}
		for err == nil {
			var more bool
			at := b.off
			if more, err = b.next(&t); err != nil || !more || t.id > rs.last {
				break
			}
			if t.id < from {
				continue
			}
			// Payload byte 0 is the record's type (wal.HeaderRoom).
			pos = append(pos, txPos{ref: ix.refFor(&rec), off: uint32(wal.HeaderRoom + at), n: uint32(b.off - at)})
			if first == 0 {
				if first = t.id; first != from {
					return errGap
				}
			}
			recs = append(recs, t.record())
			r := &recs[len(recs)-1]
			if r.extra != nil {
				if err = ix.tailCells(r.extra.exp, flagged, seeded, cells); err != nil {
					break
				}
			}
			if err = ix.tailCells(r.entries(), flagged, seeded, cells); err != nil {
				break
			}
			es := r.entries()
			if !ix.oneLedger() {
				// ledgerOf reads the first account's slot.
				for i := range es {
					if es[i].acct != SystemAccount {
						s, _ := rs.accts.slot(es[i].acct)
						es[i].cell = uint32(cell(s, es[i].col))
						break
					}
				}
			}
			if err = ix.history(recs, len(recs)-1, cells); err == nil && len(recs) == cap(recs) {
				err = ix.apply(recs, pos)
				recs, pos = recs[:0], pos[:0]
			}
		}
		if err != nil {
			var ce *CorruptError
			if errors.As(err, &ce) {
				return err
			}
			return &CorruptError{File: walDir + "/" + seg.Name(), Offset: off, FirstTx: TxID(b.first), LastTx: TxID(b.last()), Reason: "index catch-up: " + err.Error()}
		}
		return nil
	})
	if errors.Is(err, errGap) || err == nil && first != from {
		return true, nil
	}
	if err != nil {
		return false, walError(err)
	}
	if len(recs) > 0 {
		err = ix.apply(recs, pos)
	}
	return false, err
}

// tailCells sets, during a catch-up, the cells of History accounts that
// es change (and their slots in es): their columns after the transaction.
func (ix *indexWriter) tailCells(es []cellEntry, flagged map[uint64]uint64, seeded map[uint64]bool, cells tailCells) error {
	for i := range es {
		s, ok := flagged[es[i].acct]
		if !ok {
			continue
		}
		if !seeded[s] {
			if err := ix.seed(es[i].acct, s, cells); err != nil {
				return err
			}
			seeded[s] = true
		}
		c := cell(s, es[i].col)
		es[i].cell = uint32(c)
		cells[c] = es[i].value
	}
	return nil
}

// seed loads into cells the columns of account (in slot s) as of ix.last:
// from its last history record, or zero.
func (ix *indexWriter) seed(account, s uint64, cells tailCells) error {
	it, err := ix.db.NewIter(&pebble.IterOptions{LowerBound: historyKey(nil, account, 0), UpperBound: historyKey(nil, account, ix.last+1)})
	if err != nil {
		return err
	}
	defer it.Close()
	var h histRecord
	if it.Last() {
		if h, err = decodeHistory(it.Key(), it.Value()); err != nil {
			return &CorruptError{Key: clone(it.Key()), Reason: "history record: " + err.Error()}
		}
	}
	for c := range numColumns {
		cells[cell(s, c)] = h.cols[c]
	}
	return it.Error()
}

// cut removes from the index every transaction after rs.last: their
// history records, the blocks holding them and those blocks' postings
// (the block that also holds earlier transactions is written again
// without them), the account postings of accounts they created, and sets
// the state to rs.last.
func (ix *indexWriter) cut(rs *recovered) error {
	it, err := prefixIter(ix.db, prefixBlock)
	if err != nil {
		return err
	}
	defer it.Close()
	after := rs.last
	slot := rs.accts.n // the slots of the creations cut, in order
	var keep []txRecord
	var pos []txPos
	ok := it.SeekLT(idKey(prefixBlock, after+1))
	if !ok {
		ok = it.First()
	}
	var b block
	var enc []byte
	var at []uint32
	blind := false
	for ; ok; ok = it.Next() {
		if err := b.decode(it.Key(), it.Value()); err != nil {
			return err
		}
		if b.last() <= after {
			continue
		}
		if err := b.load(ix.kept); err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) || b.first <= after {
				return err
			}
			// The cut's records are often the damaged ones: the block
			// goes without its transactions read (cutBlind, below).
			log.Printf("ledger: index: cutting the block of tx %d..%d unread (%v)", b.first, b.last(), err)
			blind = true
			if err := ix.dropBlockKeys(&b); err != nil {
				return err
			}
			continue
		}
		// The transactions kept of the block are written again: a
		// reference's to its record, a copy's copied again.
		enc, at = b.encodings(at)
		keptRef := walRef{base: b.ref.base}
		if b.isRef {
			keptRef = b.ref
		} else if br, err := parseBatch(b.batch); err == nil {
			keptRef.base = br.base
		}
		var t walTx
		for id := b.first; id <= b.last(); id++ {
			if err := b.tx(id, &t); err != nil {
				return &CorruptError{Key: clone(it.Key()), Reason: "index block: " + err.Error()}
			}
			if id <= after {
				i := id - b.first
				end := uint32(len(enc))
				if id < b.last() {
					end = at[i+1]
				}
				p := txPos{ref: ix.refFor(&keptRef), off: b.from + at[i], n: end - at[i]}
				if !b.isRef {
					p.off = uint32(len(ix.raw))
					ix.raw = append(ix.raw, enc[at[i]:end]...)
				}
				pos = append(pos, p)
				r := t.record()
				es := r.entries()
				for i := range es {
					s, _ := rs.accts.slot(es[i].acct)
					es[i].cell = uint32(cell(s, es[i].col))
				}
				keep = append(keep, r)
				continue
			}
			if t.fail != OK {
				continue
			}
			for i := 0; i < t.n; i++ {
				if err := ix.b.Delete(historyKey(ix.key[:0], t.entry(i).Account, id), nil); err != nil {
					return err
				}
			}
			if t.kind == KindCreateAccount {
				for _, f := range [...]byte{fieldAll, fieldLedger, fieldCode, fieldUserData} {
					var v [16]byte
					switch f {
					case fieldLedger:
						v = u32Value(t.acct.ledger)
					case fieldCode:
						v = u16Value(t.acct.code)
					case fieldUserData:
						v = userDataValue(t.acct.userData)
					}
					if err := ix.b.Delete(postingKey(ix.key[:0], prefixAcctPosting, f, &v, slot), nil); err != nil {
						return err
					}
				}
				slot++
			}
		}
		if err := ix.dropBlock(&b); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if blind {
		if err := ix.cutBlind(after, rs.accts.n); err != nil {
			return err
		}
	}
	ix.last = after
	if len(keep) > 0 {
		return ix.apply(keep, pos)
	}
	if err := ix.b.Set(indexStateKey, encodeIndexState(ix.from, ix.last), nil); err != nil {
		return err
	}
	return ix.commit()
}

// dropBlock deletes block b, its time key and its postings.
func (ix *indexWriter) dropBlock(b *block) error {
	var t walTx
	if err := b.tx(b.last(), &t); err != nil {
		return err
	}
	tk := append(ix.key[:0], prefixBlockTime)
	tk = binary.BigEndian.AppendUint64(tk, tsKey(t.ts))
	tk = binary.BigEndian.AppendUint64(tk, b.first)
	return errors.Join(ix.b.Delete(tk, nil), ix.dropBlockKeys(b))
}

// dropBlockKeys deletes block b and its postings.
func (ix *indexWriter) dropBlockKeys(b *block) error {
	err := ix.b.Delete(idKey(prefixBlock, b.first), nil)
	for p := b.posts; len(p) >= 17; p = p[17:] {
		var v [16]byte
		copy(v[:], p[1:17])
		err = errors.Join(err, ix.b.Delete(postingKey(ix.key[:0], prefixTxPosting, p[0], &v, b.first), nil))
	}
	return err
}

// cutBlind deletes what a cut after tx after could not find through
// blocks it could not read: every time key of a block after it, history
// record of a transaction after it, and account posting of a slot from
// slot on (the accounts it created). Whole scans, but only of a cut that
// met damage.
func (ix *indexWriter) cutBlind(after, slot uint64) error {
	for _, c := range [...]struct {
		p    byte
		at   int // where the key holds the id
		from uint64
	}{{prefixBlockTime, 9, after + 1}, {prefixHistory, 9, after + 1}, {prefixAcctPosting, 18, slot}} {
		it, err := prefixIter(ix.db, c.p)
		if err != nil {
			return err
		}
		for ok := it.First(); ok && err == nil; ok = it.Next() {
			if k := it.Key(); len(k) >= c.at+8 && beU64(k[c.at:]) >= c.from {
				err = ix.b.Delete(k, nil)
			}
		}
		if err = errors.Join(err, it.Error(), it.Close()); err != nil {
			return err
		}
	}
	return nil
}
