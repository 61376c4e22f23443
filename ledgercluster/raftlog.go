package ledgercluster

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// raftLog is a replica's durable raft log: raft's MemoryStorage, which
// raft reads, in front of one append-only file, which makes it durable.
// The raft log is separate from the ledger WAL: it holds entries that may
// never commit (a deposed leader's tail) and the terms raft needs, while
// the ledger WAL holds only committed batches (see docs/ledger-cluster.md).
//
// File: records of [u32 length][u32 CRC32C of kind+payload][u8 kind][payload].
// Kinds: an entry (its index discards any later entry: raft's rule for a
// conflicting suffix), a HardState (the newest wins), a compaction mark
// (entries at or below its index are dropped on load). Open drops a torn
// tail: only a record whose sync did not return can be torn, and raft
// acted on none of it.
type raftLog struct {
	mem  *raft.MemoryStorage
	f    *os.File
	w    *bufio.Writer
	path string
	buf  []byte
}

const (
	recEntry = 1 + iota
	recHardState
	recCompact
	recHeader = 9
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// openRaftLog loads dir/raft.log; fresh reports that it held nothing.
func openRaftLog(dir string) (l *raftLog, fresh bool, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}
	path := filepath.Join(dir, "raft.log")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, err
	}
	l = &raftLog{mem: raft.NewMemoryStorage(), f: f, path: path}
	good, n, err := l.load()
	if err == nil {
		err = f.Truncate(good) // a torn tail
	}
	if err == nil {
		_, err = f.Seek(good, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("ledgercluster: raft log %s: %w", path, err)
	}
	l.w = bufio.NewWriterSize(f, 1<<20)
	return l, n == 0, nil
}

// load replays the file into mem and returns the offset after the last
// whole record and the number of records.
func (l *raftLog) load() (int64, int, error) {
	r := bufio.NewReaderSize(l.f, 1<<20)
	var (
		off   int64
		n     int
		ents  []*pb.Entry
		hs    *pb.HardState
		mark  *pb.SnapshotMetadata
		hdr   [recHeader]byte
		first uint64 // index of ents[0]
	)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			break // EOF or a torn header
		}
		size := binary.LittleEndian.Uint32(hdr[0:])
		if size > 1<<30 {
			break
		}
		p := make([]byte, size)
		if _, err := io.ReadFull(r, p); err != nil {
			break
		}
		c := crc32.Update(crc32.Checksum(hdr[8:9], crcTable), crcTable, p)
		if c != binary.LittleEndian.Uint32(hdr[4:]) {
			break
		}
		switch hdr[8] {
		case recEntry:
			e := &pb.Entry{}
			if err := proto.Unmarshal(p, e); err != nil {
				return 0, 0, err
			}
			i := e.GetIndex()
			if len(ents) > 0 && i < first+uint64(len(ents)) {
				if i < first {
					ents = ents[:0]
				} else {
					ents = ents[:i-first]
				}
			}
			if len(ents) == 0 {
				first = i
			} else if i != first+uint64(len(ents)) {
				return 0, 0, fmt.Errorf("entry %d follows %d", i, first+uint64(len(ents))-1)
			}
			ents = append(ents, e)
		case recHardState:
			hs = &pb.HardState{}
			if err := proto.Unmarshal(p, hs); err != nil {
				return 0, 0, err
			}
		case recCompact:
			mark = &pb.SnapshotMetadata{}
			if err := proto.Unmarshal(p, mark); err != nil {
				return 0, 0, err
			}
			for len(ents) > 0 && ents[0].GetIndex() <= mark.GetIndex() {
				ents = ents[1:]
				first++
			}
		default:
			return 0, 0, fmt.Errorf("record kind %d at offset %d", hdr[8], off)
		}
		off += recHeader + int64(size)
		n++
	}
	if mark != nil {
		if err := l.mem.ApplySnapshot(&pb.Snapshot{Metadata: mark}); err != nil {
			return 0, 0, err
		}
	}
	if hs != nil {
		if err := l.mem.SetHardState(hs); err != nil {
			return 0, 0, err
		}
	}
	if len(ents) > 0 {
		if err := l.mem.Append(ents); err != nil {
			return 0, 0, err
		}
	}
	return off, n, nil
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
	return err
}

// save makes a Ready's entries and HardState durable (entries first, as
// raft requires), then hands them to mem for raft to read.
func (l *raftLog) save(hs *pb.HardState, ents []*pb.Entry, sync bool) error {
	for _, e := range ents {
		if err := l.put(recEntry, e); err != nil {
			return err
		}
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
	return l.mem.Append(ents)
}

// compact drops the entries at or below index from memory, and records
// that on disk so a restart drops them too. cs is the configuration as of
// index.
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
	return l.mem.Compact(index)
}

func (l *raftLog) close() error {
	err := l.w.Flush()
	return errors.Join(err, l.f.Close())
}
