package ledger

import (
	"cmp"
	"errors"
	"fmt"
	iofs "io/fs"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lanework/lanework/ledger/internal/wal"
)

// verifyKept checks what the history index keeps beyond the ledger's own
// files, when index/wal/ exists: every kept segment not also in wal/ (those
// are the same inodes, which the WAL scan checked) by the WAL's own
// segment reader, and every reference block of the index's store (opened
// read-only), read through keptSegments as a read would, and the record
// it names checked to hold its ids where its span starts. Damage is a
// finding; the check goes on.
func (v *verifier) verifyKept(cfg *Config) error {
	kdir := keptDir(cfg)
	if _, err := cfg.FS.Stat(kdir); errors.Is(err, iofs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("ledger: verify: %w", err)
	}
	if err := v.keptSegments(cfg, kdir); err != nil {
		return err
	}
	return v.refBlocks(cfg)
}

func keptRel(name string) string { return indexDir + "/" + walDir + "/" + name }

// keptSegments checks the kept-only segments, each as an older segment
// ending where its successor (kept or in wal/) starts. Segments of a log
// that ledger recover replaced (its new log is numbered after them and
// starts at a lower tx; recover leaves index/wal/ as it is, damage
// included) are not read as a log: the index reads of them only what its
// blocks name, which refBlocks checks.
func (v *verifier) keptSegments(cfg *Config, kdir string) error {
	live, _, err := wal.List(cfg.FS, cfg.FS.PathJoin(cfg.Dir, walDir))
	if err != nil {
		return fmt.Errorf("ledger: verify: %w", err)
	}
	kept, _, err := wal.List(cfg.FS, kdir)
	if err != nil {
		return fmt.Errorf("ledger: verify: %w", err)
	}
	inWAL := make(map[wal.Segment]bool, len(live))
	for _, s := range live {
		inWAL[s] = true
	}
	// Every segment by sequence number, and where the current log starts.
	all := append([]wal.Segment(nil), live...)
	for _, s := range kept {
		if !inWAL[s] {
			all = append(all, s)
		}
	}
	slices.SortFunc(all, func(a, b wal.Segment) int { return cmp.Compare(a.Seq, b.Seq) })
	from := 0
	for i := 1; i < len(all); i++ {
		if all[i].First < all[i-1].First {
			from = i
		}
	}
	if from > 0 && len(v.rep.truncations) == 0 {
		v.finding(loc{file: keptRel(all[from].Name())}, all[from].First, all[from-1].First, "kept segment %d starts at tx %d, before its predecessor's first tx %d, and no ledger recover is recorded",
			all[from].Seq, all[from].First, all[from-1].First)
	}
	opts := walOptions(cfg, nil, nil)
	opts.Dir = kdir
	var t walTx
	for i := from; i < len(all); i++ {
		seg := all[i]
		if inWAL[seg] {
			continue
		}
		var succ uint64
		if i+1 < len(all) {
			next := all[i+1]
			succ = next.First
			if next.Seq != seg.Seq+1 {
				v.finding(loc{file: keptRel(next.Name())}, seg.First, next.First-1, "kept segment %d follows kept segment %d: segments missing", next.Seq, seg.Seq)
			}
		}
		v.rep.KeptSegments++
		err := wal.CheckSegment(opts, seg, succ, func(_ wal.Segment, off int64, p []byte) error {
			b, err := openBatch(p)
			for err == nil {
				var more bool
				if more, err = b.next(&t); !more {
					break
				}
			}
			if err != nil {
				v.finding(loc{file: keptRel(seg.Name()), off: off}, b.first, b.last(), "kept WAL segment: %v", err)
			}
			return nil
		})
		var we *wal.CorruptError
		if errors.As(err, &we) {
			v.finding(loc{file: keptRel(we.File), off: we.Offset}, we.FirstTx, we.LastTx, "kept WAL segment: %s", we.Reason)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// refBlocks reads every reference block's transactions from its kept
// segment and checks that the record it names holds the block's ids.
func (v *verifier) refBlocks(cfg *Config) error {
	dir := cfg.FS.PathJoin(cfg.Dir, indexDir)
	if _, err := cfg.FS.Stat(dir); errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	opts := indexStoreOptions(cfg)
	opts.ReadOnly = true
	db, err := pebble.Open(dir, opts)
	if errors.Is(err, pebble.ErrDBDoesNotExist) {
		return nil // index/wal/ without a store: no blocks
	}
	if err != nil {
		if oerr := openError(dir, " read-only", err); hostError(err) || errors.Is(oerr, ErrLocked) {
			return oerr
		}
		v.finding(loc{file: indexDir}, 0, 0, "index store does not open read-only: %v", err)
		return nil
	}
	defer db.Close()
	kept := newKeptSegments(cfg)
	defer kept.close()
	it, err := prefixIter(db, prefixBlock)
	if err != nil {
		return err
	}
	defer it.Close()
	var b block
	var pre []byte
	var at recordAt
	for ok := it.First(); ok; ok = it.Next() {
		if err := b.decode(it.Key(), it.Value()); err != nil {
			var ce *CorruptError
			errors.As(err, &ce) // decode's errors are all *CorruptError
			v.rep.Findings = append(v.rep.Findings, ce)
			continue
		}
		if !b.isRef {
			continue
		}
		v.rep.RefBlocks++
		if err := b.load(kept); err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				return err
			}
			v.rep.Findings = append(v.rep.Findings, ce)
			continue
		}
		// The span's ids are implied by the key: the record must put
		// transaction b.first where the span starts. A block that starts
		// where the one before it in the same record ended (as the
		// Snapshotter cuts them) continues what that one's check found;
		// any other reads the record up to its span (its batch header and
		// the transactions before it, payload bytes 1..from).
		if !at.follows(&b) {
			if pre, err = kept.read(&b.ref, 1, b.from-1, pre[:0]); err != nil {
				var ce *CorruptError
				if !errors.As(err, &ce) {
					return err
				}
				ce.FirstTx, ce.LastTx = TxID(b.first), TxID(b.last())
				v.rep.Findings = append(v.rep.Findings, ce)
				at = recordAt{}
				continue
			}
			if reason := at.start(pre, &b); reason != "" {
				v.finding(keyLoc(it.Key()), b.first, b.last(), "index block names %s offset %d, payload %d+%d: %s",
					kept.rel(&b.ref), b.ref.off, b.from, b.n, reason)
				at = recordAt{}
				continue
			}
		}
		if reason := at.span(&b); reason != "" {
			v.finding(keyLoc(it.Key()), b.first, b.last(), "index block names %s offset %d, payload %d+%d: %s",
				kept.rel(&b.ref), b.ref.off, b.from, b.n, reason)
		}
	}
	return it.Error()
}

// recordAt is where refBlocks' check of one WAL record stands: the
// record's ids and base time, and the transaction at payload offset end.
type recordAt struct {
	seq         uint64
	off         int64
	end         uint32
	next        uint64 // the id at end
	first, last uint64 // the record's
	base        int64
}

// follows reports whether block b starts in the record at where the
// check stands.
func (a *recordAt) follows(b *block) bool {
	return a.seq != 0 && a.seq == b.ref.seq && a.off == b.ref.off && a.end == b.from
}

// start reads the record prefix pre (its batch header and the
// transactions before block b's span) into a; it returns what does not
// decode, "" if all does.
func (a *recordAt) start(pre []byte, b *block) string {
	r, err := parseBatch(pre)
	if err != nil {
		return err.Error()
	}
	var t walTx
	for r.off < len(r.data) {
		if more, err := r.next(&t); err != nil || !more {
			return fmt.Sprintf("the record's transactions before the span do not decode: %v", err)
		}
	}
	*a = recordAt{seq: b.ref.seq, off: b.ref.off, end: b.from, next: r.first + r.i, first: r.first, last: r.first + r.count - 1, base: r.base}
	return ""
}

// span checks loaded block b, which starts where a stands, against the
// record: the span starts at transaction b.first, the record holds b's
// ids and b's base time; then a stands after b's span. It returns what
// differs, "" if nothing.
func (a *recordAt) span(b *block) string {
	at := a.next
	a.end, a.next = b.from+b.n, a.next+uint64(len(b.at))
	switch {
	case at != b.first:
		return fmt.Sprintf("the span starts at tx %d of the record (txs %d..%d), not %d", at, a.first, a.last, b.first)
	case b.last() > a.last:
		return fmt.Sprintf("the record holds txs %d..%d, not %d..%d", a.first, a.last, b.first, b.last())
	case a.base != b.ref.base:
		return fmt.Sprintf("the record's base time is %d, the block's %d", a.base, b.ref.base)
	}
	return ""
}
