package ledgercluster

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

func entry(term, index uint64, data string) *pb.Entry {
	return &pb.Entry{Term: proto.Uint64(term), Index: proto.Uint64(index), Type: pb.EntryNormal.Enum(), Data: []byte(data)}
}

// TestRaftLogReload: what save wrote comes back after a reopen — a later
// entry at an index replaces the suffix from there, the newest HardState
// wins, a compaction mark drops what is below it and keeps the
// configuration — and a torn tail is dropped.
func TestRaftLogReload(t *testing.T) {
	dir := t.TempDir()
	rl, fresh, err := openRaftLog(dir)
	if err != nil || !fresh {
		t.Fatalf("open: %v fresh=%v", err, fresh)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rl.save(&pb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(0)}, []*pb.Entry{entry(1, 1, "a"), entry(1, 2, "b"), entry(1, 3, "c")}, true))
	must(rl.save(&pb.HardState{Term: proto.Uint64(2), Vote: proto.Uint64(2), Commit: proto.Uint64(2)}, []*pb.Entry{entry(2, 3, "C"), entry(2, 4, "D")}, true))
	must(rl.compact(1, &pb.ConfState{Voters: []uint64{1, 2, 3}}))
	must(rl.save(nil, []*pb.Entry{entry(2, 5, "E")}, true))
	must(rl.close())

	// A torn record after the last whole one.
	f, err := os.OpenFile(filepath.Join(dir, segName(1)), os.O_WRONLY|os.O_APPEND, 0)
	must(err)
	_, err = f.Write([]byte{40, 0, 0, 0, 1, 2, 3, 4, recEntry, 9, 9})
	must(err)
	must(f.Close())

	rl, fresh, err = openRaftLog(dir)
	must(err)
	defer rl.close()
	if fresh {
		t.Fatal("reopened log is fresh")
	}
	hs, cs, err := rl.mem.InitialState()
	must(err)
	if hs.GetTerm() != 2 || hs.GetVote() != 2 || hs.GetCommit() != 2 {
		t.Errorf("hard state %v", hs)
	}
	if len(cs.GetVoters()) != 3 {
		t.Errorf("conf state %v", cs)
	}
	first, _ := rl.mem.FirstIndex()
	last, _ := rl.mem.LastIndex()
	if first != 2 || last != 5 {
		t.Fatalf("entries %d..%d, want 2..5", first, last)
	}
	ents, err := rl.mem.Entries(2, 6, 1<<20)
	must(err)
	var got string
	for _, e := range ents {
		got += string(e.GetData())
	}
	if got != "bCDE" {
		t.Errorf("entries %q, want bCDE", got)
	}
	if term, _ := rl.mem.Term(1); term != 1 {
		t.Errorf("term of the compaction mark %d", term)
	}
	// The torn tail is gone: appending after it reloads cleanly.
	must(rl.save(nil, []*pb.Entry{entry(2, 6, "F")}, true))
}

// TestRaftLogRotation: past the segment size the log starts a new segment
// that restates the HardState and the mark; a compaction removes the
// segments whose entries it covers; a reopen finds the same state; an
// installed snapshot drops every entry, also on reload.
func TestRaftLogRotation(t *testing.T) {
	old := raftSegmentBytes
	raftSegmentBytes = 1 << 10
	t.Cleanup(func() { raftSegmentBytes = old })
	dir := t.TempDir()
	rl, _, err := openRaftLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	data := string(make([]byte, 100))
	for i := uint64(1); i <= 100; i++ {
		must(rl.save(&pb.HardState{Term: proto.Uint64(1), Commit: proto.Uint64(i)}, []*pb.Entry{entry(1, i, data)}, false))
	}
	if len(rl.segs) < 5 {
		t.Fatalf("%d segments after 100 entries of 100 bytes", len(rl.segs))
	}
	before := len(rl.segs)
	must(rl.compact(90, &pb.ConfState{Voters: []uint64{1, 2, 3}}))
	files, _ := os.ReadDir(dir)
	if len(files) != len(rl.segs) || len(rl.segs) > 2 {
		t.Fatalf("%d segments, %d files after compacting to 90 (%d before)", len(rl.segs), len(files), before)
	}
	must(rl.close())
	rl, fresh, err := openRaftLog(dir)
	must(err)
	if fresh {
		t.Fatal("reopened log is fresh")
	}
	hs, cs, err := rl.mem.InitialState()
	must(err)
	first, _ := rl.mem.FirstIndex()
	last, _ := rl.mem.LastIndex()
	if hs.GetCommit() != 100 || len(cs.GetVoters()) != 3 || first != 91 || last != 100 {
		t.Fatalf("reloaded: hard state %v, conf %v, entries %d..%d", hs, cs, first, last)
	}
	must(rl.applySnapshot(&pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: proto.Uint64(95), Term: proto.Uint64(1), ConfState: cs}}))
	must(rl.close())
	rl, _, err = openRaftLog(dir)
	must(err)
	defer rl.close()
	first, _ = rl.mem.FirstIndex()
	last, _ = rl.mem.LastIndex()
	if first != 96 || last != 95 {
		t.Fatalf("after a snapshot at 95: entries %d..%d", first, last)
	}
}

// TestKnownCommit: a replica's idea of the last committed transaction
// follows the batch at its raft commit index; an entry without a batch, or
// one its log does not hold, leaves it.
func TestKnownCommit(t *testing.T) {
	rl, _, err := openRaftLog(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rl.close()
	batch := func(first uint64, count uint32) string {
		b := make([]byte, 16)
		binary.LittleEndian.PutUint64(b[4:], first)
		binary.LittleEndian.PutUint32(b[12:], count)
		return string(b)
	}
	if err := rl.save(nil, []*pb.Entry{entry(1, 1, batch(1, 3)), entry(1, 2, ""), entry(1, 3, batch(4, 2))}, false); err != nil {
		t.Fatal(err)
	}
	n := &Node{rl: rl}
	for _, c := range []struct{ commit, want uint64 }{{1, 3}, {2, 3}, {3, 5}, {99, 5}, {1, 5}} {
		n.noteCommit(c.commit)
		if got := n.knownTx.Load(); got != c.want {
			t.Errorf("commit %d: known tx %d, want %d", c.commit, got, c.want)
		}
	}
}
