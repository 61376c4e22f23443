package ledgercluster

import (
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
	f, err := os.OpenFile(filepath.Join(dir, "raft.log"), os.O_WRONLY|os.O_APPEND, 0)
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
