package ledger

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lanework/lanework/ledger/internal/wal"
)

// Checkpoints carry a ledger's durable state to a replica that fell behind
// what its cluster retains (ledgercluster sends one through raft's
// snapshot mechanism). A checkpoint is what recovery needs and nothing
// more: the pebble records as of one moment — the newest persisted
// snapshot, the account records, the durable idempotency index, the meta
// record — and the WAL batches from the start of the segment that holds
// the snapshot's next transaction through the last committed one, with
// the replica hash before the first of them. Installed, it is a directory
// a crash could have left behind on the sending replica: Open recovers it
// by the ordinary rules (the snapshot, then the WAL replay).
//
// Stream: the magic, then records [u8 kind][u32 length][payload][u32
// CRC32C of kind, length and payload]:
//
//	'K' a pebble record: [u32 key length][key][value]
//	'W' the WAL's start: [u64 first tx][u64 hash before it]
//	'B' a WAL batch, as encoded in the WAL
//	'E' the end: [u64 last tx][u64 hash after it][u64 records before it]
//
// A stream without its end record, or with any record that fails its
// checksum, is refused whole.
const ckptMagic = "lwckpt\x00\x01"

const (
	ckptKV    = 'K'
	ckptWAL   = 'W'
	ckptBatch = 'B'
	ckptEnd   = 'E'
)

// ErrCheckpoint is wrapped by every refusal of a checkpoint stream.
var ErrCheckpoint = errors.New("ledger: bad checkpoint")

type ckptWriter struct {
	w   *bufio.Writer
	n   uint64
	hdr [5]byte
}

func (c *ckptWriter) put(kind byte, parts ...[]byte) error {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	c.hdr[0] = kind
	binary.LittleEndian.PutUint32(c.hdr[1:], uint32(size))
	crc := crc32.Checksum(c.hdr[:], castagnoli)
	if _, err := c.w.Write(c.hdr[:]); err != nil {
		return err
	}
	for _, p := range parts {
		crc = crc32.Update(crc, castagnoli, p)
		if _, err := c.w.Write(p); err != nil {
			return err
		}
	}
	c.n++
	return binary.Write(c.w, binary.LittleEndian, crc)
}

// WriteCheckpoint writes a checkpoint of l to w and returns the last
// transaction it holds (every transaction committed when it began, at
// least). It reads while the ledger goes on; Close waits for it, so end
// it through ctx. It fails with ErrClosed on a closed ledger and with
// wal.ErrNotFound-like errors if retention removed the WAL it needed
// meanwhile (try again).
func (l *Ledger) WriteCheckpoint(ctx context.Context, w io.Writer) (TxID, error) {
	l.ckptMu.RLock()
	defer l.ckptMu.RUnlock()
	if err := l.refused(l.state.Load()); err != nil {
		return 0, err
	}
	snap := l.db.NewSnapshot()
	defer snap.Close()
	var ixsnap *pebble.Snapshot // the index's store, if kept: its keys follow the ledger store's
	if l.ixdb != nil {
		ixsnap = l.ixdb.NewSnapshot()
		defer ixsnap.Close()
	}
	last := l.committed.Load() // after the snapshots: nothing in them is newer
	cw := &ckptWriter{w: bufio.NewWriterSize(w, 1<<20)}
	if _, err := cw.w.WriteString(ckptMagic); err != nil {
		return 0, err
	}
	s0, err := newestSnapshot(snap)
	if err != nil {
		return 0, err
	}
	it, err := snap.NewIter(nil)
	if err != nil {
		return 0, err
	}
	var klen [4]byte
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		switch k[0] {
		case prefixNewest, prefixOldest, prefixHash:
			continue // the receiver's WAL has its own segments
		case prefixSnapshot:
			if id, _ := parseIDKey(prefixSnapshot, k); id != s0 {
				continue // only the newest snapshot is of use
			}
		case prefixChunk:
			if len(k) != 13 || binary.BigEndian.Uint64(k[1:]) != s0 {
				continue
			}
		}
		binary.LittleEndian.PutUint32(klen[:], uint32(len(k)))
		if err := cw.put(ckptKV, klen[:], k, it.Value()); err != nil {
			it.Close()
			return 0, err
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return 0, err
	}
	if ixsnap != nil {
		if it, err = ixsnap.NewIter(nil); err != nil {
			return 0, err
		}
		// A reference block goes as a copy: the receiver's WAL has other
		// segments.
		var b block
		var cp []byte
		for ok := it.First(); ok; ok = it.Next() {
			v := it.Value()
			if it.Key()[0] == prefixBlock {
				err := b.decode(it.Key(), v)
				if err == nil && b.isRef {
					if err = b.load(l.kept); err == nil {
						cp = b.appendCopy(cp[:0])
						v = cp
					}
				}
				if err != nil {
					it.Close()
					return 0, fmt.Errorf("ledger: checkpoint: %w", err)
				}
			}
			binary.LittleEndian.PutUint32(klen[:], uint32(len(it.Key())))
			if err := cw.put(ckptKV, klen[:], it.Key(), v); err != nil {
				it.Close()
				return 0, err
			}
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return 0, err
		}
	}
	// The WAL from the start of the segment holding the snapshot's next
	// transaction (the last one's, if the snapshot covers everything).
	first, hash := uint64(1), uint64(0)
	if last > 0 {
		from := min(s0+1, last)
		segs := l.wal.Segments()
		for _, s := range segs {
			if s.First <= from {
				first = s.First
				h, _, err := segmentHash(l.db, s.Seq)
				if err != nil {
					return 0, err
				}
				hash = h
			}
		}
	}
	var start [16]byte
	binary.LittleEndian.PutUint64(start[0:], first)
	binary.LittleEndian.PutUint64(start[8:], hash)
	if err := cw.put(ckptWAL, start[:]); err != nil {
		return 0, err
	}
	if last >= first {
		err := l.wal.Read(first, last, func(batch []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			hash = chainBatch(hash, batch)
			return cw.put(ckptBatch, batch)
		})
		if err != nil {
			return 0, fmt.Errorf("ledger: checkpoint: WAL from tx %d: %w", first, err)
		}
	}
	var end [24]byte
	binary.LittleEndian.PutUint64(end[0:], last)
	binary.LittleEndian.PutUint64(end[8:], hash)
	binary.LittleEndian.PutUint64(end[16:], cw.n)
	if err := cw.put(ckptEnd, end[:]); err != nil {
		return 0, err
	}
	return TxID(last), cw.w.Flush()
}

// newestSnapshot returns the id of the newest snapshot manifest, 0 if none.
func newestSnapshot(r pebble.Reader) (uint64, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixSnapshot}, UpperBound: prefixEnd(prefixSnapshot)})
	if err != nil {
		return 0, err
	}
	var id uint64
	if it.Last() {
		id, _ = parseIDKey(prefixSnapshot, it.Key())
	}
	return id, errors.Join(it.Error(), it.Close())
}

// installSuffix and oldSuffix name the directories InstallCheckpoint uses
// beside cfg.Dir: the one it builds, and the replaced one until removed.
const (
	installSuffix = ".install"
	oldSuffix     = ".old"
)

// InstallCheckpoint replaces the ledger directory cfg.Dir (closed; it may
// not exist) by the checkpoint read from r, and returns the checkpoint's
// last transaction. It builds the new directory beside it, syncs it, then
// swaps the two by renames; a crash leaves the old directory or the new
// one once FinishInstall ran. A stream that is cut short or damaged fails
// with ErrCheckpoint and leaves cfg.Dir as it was.
func InstallCheckpoint(cfg Config, r io.Reader) (TxID, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return 0, err
	}
	fs := cfg.FS
	if err := FinishInstall(cfg); err != nil {
		return 0, err
	}
	tmp := cfg
	tmp.Dir = cfg.Dir + installSuffix
	if err := fs.RemoveAll(tmp.Dir); err != nil {
		return 0, err
	}
	last, err := buildFromCheckpoint(&tmp, bufio.NewReaderSize(r, 1<<20))
	if err != nil {
		return 0, errors.Join(err, fs.RemoveAll(tmp.Dir))
	}
	old := cfg.Dir + oldSuffix
	if _, err := fs.Stat(cfg.Dir); err == nil {
		if err := fs.Rename(cfg.Dir, old); err != nil {
			return 0, err
		}
	}
	if err := fs.Rename(tmp.Dir, cfg.Dir); err != nil {
		return 0, err
	}
	parent, err := fs.OpenDir(fs.PathDir(cfg.Dir))
	if err != nil {
		return 0, err
	}
	if err := errors.Join(parent.Sync(), parent.Close()); err != nil {
		return 0, err
	}
	return last, fs.RemoveAll(old)
}

// FinishInstall completes or undoes an InstallCheckpoint a crash cut short:
// the replaced directory is removed if the new one is in place, else put
// back; a half-built one is removed. Call it before opening cfg.Dir when
// checkpoints are installed there.
func FinishInstall(cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	fs, old := cfg.FS, cfg.Dir+oldSuffix
	if _, err := fs.Stat(old); err == nil {
		if _, err := fs.Stat(cfg.Dir); err == nil {
			if err := fs.RemoveAll(old); err != nil {
				return err
			}
		} else if err := fs.Rename(old, cfg.Dir); err != nil {
			return err
		}
	}
	return fs.RemoveAll(cfg.Dir + installSuffix)
}

// buildFromCheckpoint writes the checkpoint into the new directory cfg.Dir
// and syncs it.
func buildFromCheckpoint(cfg *Config, r *bufio.Reader) (TxID, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrCheckpoint}, args...)...)
	}
	magic := make([]byte, len(ckptMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != ckptMagic {
		return 0, bad("no checkpoint magic")
	}
	db, err := pebble.Open(cfg.Dir, pebbleOptions(cfg))
	if err != nil {
		return 0, err
	}
	var (
		w      *wal.Writer
		hash   = new(atomic.Uint64)
		next   uint64 // the next transaction the WAL takes
		n      uint64
		buf    []byte
		rec    []byte
		b      = db.NewBatch()
		ix     = &ckptIndex{cfg: cfg} // the index's keys go to its own store
		hdr    [5]byte
		sum    [4]byte
		meta   bool
		closed bool
	)
	defer func() {
		b.Close()
		if w != nil && !closed {
			w.Close()
		}
		if !closed {
			db.Close()
			ix.close()
		}
	}()
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return 0, bad("cut short after %d records: %v", n, err)
		}
		size := binary.LittleEndian.Uint32(hdr[1:])
		if size > 1<<30 {
			return 0, bad("record %d: %d bytes", n, size)
		}
		if cap(buf) < int(size) {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf); err != nil {
			return 0, bad("cut short in record %d: %v", n, err)
		}
		if _, err := io.ReadFull(r, sum[:]); err != nil {
			return 0, bad("cut short in record %d: %v", n, err)
		}
		if crc32.Update(crc32.Checksum(hdr[:], castagnoli), castagnoli, buf) != binary.LittleEndian.Uint32(sum[:]) {
			return 0, bad("record %d: checksum", n)
		}
		switch kind := hdr[0]; {
		case kind == ckptKV && w == nil:
			if size < 4 || uint64(binary.LittleEndian.Uint32(buf)) > uint64(size-4) || binary.LittleEndian.Uint32(buf) == 0 {
				return 0, bad("record %d: key length", n)
			}
			kl := binary.LittleEndian.Uint32(buf)
			k := buf[4 : 4+kl]
			meta = meta || (len(k) == 1 && k[0] == prefixMeta)
			if isIndexKey(k) {
				if err := ix.set(k, buf[4+kl:]); err != nil {
					return 0, err
				}
				break
			}
			if err := b.Set(k, buf[4+kl:], nil); err != nil {
				return 0, err
			}
			if b.Len() > 4<<20 {
				if err := b.Commit(pebble.NoSync); err != nil {
					return 0, err
				}
				b.Reset()
			}
		case kind == ckptWAL && w == nil:
			if size != 16 || !meta {
				return 0, bad("record %d: WAL start of %d bytes, meta record seen: %t", n, size, meta)
			}
			// Synced: pebble's log is sequential, so every record
			// before is durable too.
			if err := b.Commit(pebble.Sync); err != nil {
				return 0, err
			}
			next = binary.LittleEndian.Uint64(buf)
			hash.Store(binary.LittleEndian.Uint64(buf[8:]))
			if w, err = wal.Create(walOptions(cfg, db, hash), nil, next); err != nil {
				return 0, err
			}
		case kind == ckptBatch && w != nil:
			first, lst, err := batchSpan(buf)
			if err != nil || first != next {
				return 0, bad("record %d: batch of tx %d..%d after tx %d: %v", n, first, lst, next-1, err)
			}
			rec = append(append(rec[:0], make([]byte, wal.HeaderRoom)...), buf...)
			if err := w.Append(rec, first, lst); err != nil {
				return 0, err
			}
			hash.Store(chainBatch(hash.Load(), buf))
			next = lst + 1
		case kind == ckptEnd && w != nil:
			if size != 24 || binary.LittleEndian.Uint64(buf) != next-1 || binary.LittleEndian.Uint64(buf[8:]) != hash.Load() ||
				binary.LittleEndian.Uint64(buf[16:]) != n {
				return 0, bad("end record does not match: %d bytes, tx %d, %d records", size, next-1, n)
			}
			closed = true
			return TxID(next - 1), errors.Join(w.Close(), db.Close(), ix.close())
		default:
			return 0, bad("record %d: kind %q out of place", n, kind)
		}
		n++
	}
}

// isIndexKey reports whether k is a key of the history and query indexes.
func isIndexKey(k []byte) bool {
	return k[0] == prefixIndexState || slices.Contains(indexPrefixes[:], k[0])
}

// ckptIndex writes a checkpoint's index keys into the new directory's
// index store, opened at the first of them.
type ckptIndex struct {
	cfg *Config
	db  *pebble.DB
	b   *pebble.Batch
}

func (c *ckptIndex) set(k, v []byte) error {
	if c.db == nil {
		db, err := openIndexStore(c.cfg)
		if err != nil {
			return err
		}
		c.db, c.b = db, db.NewBatch()
	}
	if err := c.b.Set(k, v, nil); err != nil {
		return err
	}
	if c.b.Len() < 4<<20 {
		return nil
	}
	err := c.b.Commit(pebble.NoSync)
	c.b.Reset()
	return err
}

// close commits what is left and closes the store, flushed (it has no log).
func (c *ckptIndex) close() error {
	if c.db == nil {
		return nil
	}
	err := c.b.Commit(pebble.NoSync)
	c.b.Close()
	err = errors.Join(err, closeIndexStore(c.db))
	c.db, c.b = nil, nil
	return err
}
