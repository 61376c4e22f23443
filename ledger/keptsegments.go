package ledger

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lanework/lanework/ledger/internal/wal"
)

// keptSegments reads the spans reference blocks name (indexblock.go) from
// the kept segments, index/wal/<segment name>, through a few read-only
// descriptors it keeps open: reads of blocks mostly come in runs from one
// segment. Safe for concurrent reads (ReadAt is a pread; a descriptor in
// use is never closed under its reader). Ledger.Close closes it.
type keptSegments struct {
	fs   vfs.FS
	dir  string
	keep int // descriptors kept open when none is in use: keptOpenMax

	mu     sync.Mutex
	files  []*keptDesc // most recently used last
	closed bool
}

// keptOpenMax is how many descriptors stay open when none is in use.
const keptOpenMax = 8

type keptDesc struct {
	seg   wal.Segment
	f     vfs.File
	users int
	gone  bool // evicted while in use: closed by its last user
}

func newKeptSegments(cfg *Config) *keptSegments {
	return &keptSegments{fs: cfg.FS, dir: keptDir(cfg), keep: keptOpenMax}
}

// rel is the file of r relative to the ledger directory, for errors.
func (k *keptSegments) rel(r *walRef) string {
	return indexDir + "/" + walDir + "/" + wal.Segment{Seq: r.seq, First: r.segFirst}.Name()
}

// read appends payload bytes [from, from+n) of record r to dst (whose
// spare room beyond them, up to 32 KiB, is read's scratch) and returns it.
// A chunk that fails its checks, or a segment missing, is a *CorruptError
// naming the file and offset.
func (k *keptSegments) read(r *walRef, from, n uint32, dst []byte) ([]byte, error) {
	kf, err := k.acquire(r)
	if err != nil {
		return dst, err
	}
	dst, err = wal.ReadSpan(kf.f, kf.seg.Name(), r.seq, r.off, int64(from), int64(n), dst)
	k.release(kf)
	var we *wal.CorruptError
	if errors.As(err, &we) {
		return dst, &CorruptError{File: k.rel(r), Offset: we.Offset, Reason: "kept WAL segment: " + we.Reason}
	}
	if err != nil {
		return dst, fmt.Errorf("ledger: index: %w", err)
	}
	return dst, nil
}

func (k *keptSegments) acquire(r *walRef) (*keptDesc, error) {
	seg := wal.Segment{Seq: r.seq, First: r.segFirst}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, ErrClosed
	}
	for i, kf := range k.files {
		if kf.seg == seg {
			copy(k.files[i:], k.files[i+1:])
			k.files[len(k.files)-1] = kf
			kf.users++
			return kf, nil
		}
	}
	f, err := k.fs.Open(k.fs.PathJoin(k.dir, seg.Name()))
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return nil, &CorruptError{File: k.rel(r), Reason: "kept WAL segment missing: the index refers to it"}
		}
		return nil, fmt.Errorf("ledger: index: open kept segment: %w", err)
	}
	kf := &keptDesc{seg: seg, f: f, users: 1}
	k.files = append(k.files, kf)
	if len(k.files) > k.keep {
		for i, old := range k.files[:len(k.files)-1] {
			if old.users == 0 {
				k.files = append(k.files[:i], k.files[i+1:]...)
				old.f.Close()
				break
			}
		}
	}
	return kf, nil
}

func (k *keptSegments) release(kf *keptDesc) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if kf.users--; kf.users == 0 && kf.gone {
		kf.f.Close()
	}
}

// close closes every descriptor; reads after it fail with ErrClosed.
func (k *keptSegments) close() error {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	var err error
	for _, kf := range k.files {
		if kf.users == 0 {
			err = errors.Join(err, kf.f.Close())
		} else {
			kf.gone = true
		}
	}
	k.files = nil
	return err
}
