package ledgercluster

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// raftLog is a replica's durable raft log: raft's MemoryStorage, which
// raft reads, in front of append-only segment files, which make it
// durable. The raft log is separate from the ledger WAL: it holds entries
// that may never commit (a deposed leader's tail) and the terms raft
// needs, while the ledger WAL holds only committed batches (see
// docs/ledger-cluster.md).
//
// Files: dir/<seq:016x>.raft, read in sequence order, each a stream of
// records [u32 length][u32 CRC32C of kind+payload][u8 kind][payload].
// Kinds: an entry (its index discards any later entry: raft's rule for a
// conflicting suffix), a HardState (the newest wins), a compaction mark
// (entries at or below its index are dropped), a snapshot (raft installed
// one: every entry is dropped). Open drops a torn tail of the newest
// segment: only a record whose sync did not return can be torn, and raft
// acted on none of it.
//
// Rotation keeps the files bounded: once a segment passes segmentBytes, a
// new one starts with the current HardState and compaction mark, so that
// the older segments hold nothing but entries; a compaction then removes
// every older segment whose entries are all at or below its mark.
type raftLog struct {
	mem  *raft.MemoryStorage
	dir  string
	segs []raftSeg // oldest first; the last is written
	f    *os.File
	w    *bufio.Writer
	size int64 // bytes in the written segment
	buf  []byte
}

// raftSeg is one segment file and the highest entry index written to it.
type raftSeg struct {
	seq, last uint64
}

const (
	recEntry = 1 + iota
	recHardState
	recCompact
	recSnapshot
	recHeader = 9
)

// raftSegmentBytes is the size past which the raft log starts a new
// segment; a variable so that a test can rotate a short log.
var raftSegmentBytes = int64(64 << 20)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func segName(seq uint64) string { return fmt.Sprintf("%016x.raft", seq) }

// openRaftLog loads the segments in dir; fresh reports that they held
// nothing.
func openRaftLog(dir string) (l *raftLog, fresh bool, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, false, err
	}
	l = &raftLog{mem: raft.NewMemoryStorage(), dir: dir}
	for _, e := range names {
		s, ok := strings.CutSuffix(e.Name(), ".raft")
		seq, err := strconv.ParseUint(s, 16, 64)
		if !ok || err != nil || len(s) != 16 {
			return nil, false, fmt.Errorf("ledgercluster: raft log %s: unexpected file %s", dir, e.Name())
		}
		l.segs = append(l.segs, raftSeg{seq: seq})
	}
	slices.SortFunc(l.segs, func(a, b raftSeg) int { return cmp.Compare(a.seq, b.seq) })
	st := &loadState{}
	records := 0
	var good int64
	for i := range l.segs {
		newest := i == len(l.segs)-1
		n, off, torn, err := l.loadSegment(&l.segs[i], st)
		if err == nil && torn && !newest {
			err = errors.New("damaged record before the newest segment")
		}
		if err != nil {
			return nil, false, fmt.Errorf("ledgercluster: raft log %s at offset %d: %w", segName(l.segs[i].seq), off, err)
		}
		records += n
		good = off
	}
	if err := st.apply(l.mem); err != nil {
		return nil, false, fmt.Errorf("ledgercluster: raft log %s: %w", dir, err)
	}
	if len(l.segs) == 0 {
		if err := l.startSegment(1); err != nil {
			return nil, false, err
		}
		return l, true, nil
	}
	cur := l.segs[len(l.segs)-1]
	f, err := os.OpenFile(filepath.Join(dir, segName(cur.seq)), os.O_RDWR, 0o644)
	if err == nil {
		err = f.Truncate(good) // a torn tail
	}
	if err == nil {
		_, err = f.Seek(good, io.SeekStart)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, false, fmt.Errorf("ledgercluster: raft log %s: %w", dir, err)
	}
	l.f, l.w, l.size = f, bufio.NewWriterSize(f, 1<<20), good
	return l, records == 0, nil
}

// loadState is what the records read so far leave.
type loadState struct {
	ents  []*pb.Entry
	first uint64 // index of ents[0]
	hs    *pb.HardState
	mark  *pb.SnapshotMetadata
}

func (st *loadState) apply(mem *raft.MemoryStorage) error {
	if st.mark != nil {
		if err := mem.ApplySnapshot(&pb.Snapshot{Metadata: st.mark}); err != nil {
			return err
		}
	}
	if st.hs != nil {
		if err := mem.SetHardState(st.hs); err != nil {
			return err
		}
	}
	if len(st.ents) > 0 {
		return mem.Append(st.ents)
	}
	return nil
}

// loadSegment reads one segment's records into st; it returns how many,
// the offset after the last whole one and whether a torn one followed.
func (l *raftLog) loadSegment(seg *raftSeg, st *loadState) (n int, off int64, torn bool, err error) {
	f, err := os.Open(filepath.Join(l.dir, segName(seg.seq)))
	if err != nil {
		return 0, 0, false, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var hdr [recHeader]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return n, off, err != io.EOF, nil // EOF or a torn header
		}
		size := binary.LittleEndian.Uint32(hdr[0:])
		if size > 1<<30 {
			return n, off, true, nil
		}
		p := make([]byte, size)
		if _, err := io.ReadFull(r, p); err != nil {
			return n, off, true, nil
		}
		if crc32.Update(crc32.Checksum(hdr[8:9], crcTable), crcTable, p) != binary.LittleEndian.Uint32(hdr[4:]) {
			return n, off, true, nil
		}
		switch hdr[8] {
		case recEntry:
			e := &pb.Entry{}
			if err := proto.Unmarshal(p, e); err != nil {
				return n, off, false, err
			}
			i := e.GetIndex()
			seg.last = max(seg.last, i)
			if len(st.ents) > 0 && i < st.first+uint64(len(st.ents)) {
				if i < st.first {
					st.ents = st.ents[:0]
				} else {
					st.ents = st.ents[:i-st.first]
				}
			}
			if len(st.ents) == 0 {
				st.first = i
			} else if i != st.first+uint64(len(st.ents)) {
				return n, off, false, fmt.Errorf("entry %d follows %d", i, st.first+uint64(len(st.ents))-1)
			}
			st.ents = append(st.ents, e)
		case recHardState:
			st.hs = &pb.HardState{}
			if err := proto.Unmarshal(p, st.hs); err != nil {
				return n, off, false, err
			}
		case recCompact, recSnapshot:
			st.mark = &pb.SnapshotMetadata{}
			if err := proto.Unmarshal(p, st.mark); err != nil {
				return n, off, false, err
			}
			if hdr[8] == recSnapshot {
				st.ents = st.ents[:0]
			}
			for len(st.ents) > 0 && st.ents[0].GetIndex() <= st.mark.GetIndex() {
				st.ents = st.ents[1:]
				st.first++
			}
		default:
			return n, off, false, fmt.Errorf("record kind %d", hdr[8])
		}
		off += recHeader + int64(size)
		n++
	}
}

func (l *raftLog) put(kind byte, m proto.Message) error {
	var err error
	l.buf, err = proto.MarshalOptions{}.MarshalAppend(l.buf[:0], m)
	if err != nil {
		return err
	}
	var hdr [recHeader]byte
	binary.LittleEndian.PutUint32(hdr[0:], uint32(len(l.buf)))
	hdr[8] = kind
	binary.LittleEndian.PutUint32(hdr[4:], crc32.Update(crc32.Checksum(hdr[8:9], crcTable), crcTable, l.buf))
	if _, err := l.w.Write(hdr[:]); err != nil {
		return err
	}
	_, err = l.w.Write(l.buf)
	l.size += recHeader + int64(len(l.buf))
	return err
}

// save makes a Ready's entries and HardState durable (entries first, as
// raft requires), then hands them to mem for raft to read.
func (l *raftLog) save(hs *pb.HardState, ents []*pb.Entry, sync bool) error {
	cur := &l.segs[len(l.segs)-1]
	for _, e := range ents {
		if err := l.put(recEntry, e); err != nil {
			return err
		}
		cur.last = max(cur.last, e.GetIndex())
	}
	if hs != nil && !raft.IsEmptyHardState(hs) {
		if err := l.put(recHardState, hs); err != nil {
			return err
		}
	}
	if err := l.w.Flush(); err != nil {
		return err
	}
	if sync {
		if err := l.f.Sync(); err != nil {
			return err
		}
	}
	if hs != nil && !raft.IsEmptyHardState(hs) {
		if err := l.mem.SetHardState(hs); err != nil {
			return err
		}
	}
	if err := l.mem.Append(ents); err != nil {
		return err
	}
	if l.size > raftSegmentBytes {
		return l.startSegment(cur.seq + 1)
	}
	return nil
}

// startSegment ends the written segment and starts segment seq with the
// current HardState and compaction mark, synced with its directory entry.
func (l *raftLog) startSegment(seq uint64) error {
	if l.f != nil {
		if err := errors.Join(l.w.Flush(), l.f.Close()); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(filepath.Join(l.dir, segName(seq)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	l.f, l.w, l.size = f, bufio.NewWriterSize(f, 1<<20), 0
	l.segs = append(l.segs, raftSeg{seq: seq})
	hs, _, err := l.mem.InitialState()
	if err != nil {
		return err
	}
	snap, err := l.mem.Snapshot()
	if err != nil {
		return err
	}
	if !raft.IsEmptyHardState(hs) {
		if err := l.put(recHardState, hs); err != nil {
			return err
		}
	}
	if snap.GetMetadata().GetIndex() > 0 {
		if err := l.put(recCompact, snap.GetMetadata()); err != nil {
			return err
		}
	}
	if err := l.w.Flush(); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	return syncDir(l.dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// compact drops the entries at or below index from memory, records that
// on disk so a restart drops them too, and removes the segments that held
// only such entries. cs is the configuration as of index.
func (l *raftLog) compact(index uint64, cs *pb.ConfState) error {
	snap, err := l.mem.CreateSnapshot(index, cs, nil)
	if errors.Is(err, raft.ErrSnapOutOfDate) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := l.put(recCompact, snap.Metadata); err != nil {
		return err
	}
	if err := l.w.Flush(); err != nil {
		return err
	}
	if err := l.mem.Compact(index); err != nil {
		return err
	}
	return l.removeOld(index)
}

// removeOld removes, oldest first, the segments before the written one
// whose entries are all at or below index. The written segment, or one
// after those, restated the HardState and a mark (startSegment), so they
// hold nothing else of use. Unsynced: a removal a crash undoes leaves a
// segment whose records later ones supersede.
func (l *raftLog) removeOld(index uint64) error {
	k := 0
	for k < len(l.segs)-1 && l.segs[k].last <= index {
		if err := os.Remove(filepath.Join(l.dir, segName(l.segs[k].seq))); err != nil && !os.IsNotExist(err) {
			return err
		}
		k++
	}
	l.segs = append(l.segs[:0], l.segs[k:]...)
	return nil
}

// applySnapshot records that raft installed snap (the replica's ledger
// holds its state): every entry is dropped, on disk and in memory.
func (l *raftLog) applySnapshot(snap *pb.Snapshot) error {
	if err := l.put(recSnapshot, snap.GetMetadata()); err != nil {
		return err
	}
	if err := l.w.Flush(); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	return l.mem.ApplySnapshot(&pb.Snapshot{Metadata: snap.GetMetadata()})
}

func (l *raftLog) close() error {
	err := l.w.Flush()
	return errors.Join(err, l.f.Close())
}
