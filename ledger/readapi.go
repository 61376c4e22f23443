package ledger

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"time"
)

// MaxReadLimit is the most items one read returns (Limit) and the most ids
// one lookup takes: 8,190, as TigerBeetle's batches.
const MaxReadLimit = 8190

var (
	// ErrIndexOff: a read of the history or query indexes on a ledger
	// opened without Config.Index, or on a follower (the leader keeps
	// them).
	ErrIndexOff = errors.New("ledger: history and query indexes are off (opened without Config.Index, or a follower)")
	// ErrNoHistory: AccountTransfers, AccountBalances or BalanceAt of an
	// account created without the History flag.
	ErrNoHistory = errors.New("ledger: account keeps no history (created without the history flag)")
	// ErrFilter is wrapped by every *FilterError.
	ErrFilter = errors.New("ledger: invalid filter")
)

// FilterError refuses a read's filter; Field names the field (as the JSON
// and msgpack APIs spell it).
type FilterError struct {
	Field  string
	Reason string
}

func (e *FilterError) Error() string { return fmt.Sprintf("ledger: filter %s: %s", e.Field, e.Reason) }

// Unwrap returns ErrFilter.
func (e *FilterError) Unwrap() error { return ErrFilter }

func filterErr(field, format string, args ...any) error {
	return &FilterError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ReadInfo says which state a read saw. Reads of the indexes are exact: they
// reflect every transaction up to AsOf and none after it (Through equals
// AsOf). Reads of current balances (LookupAccounts, the columns of
// QueryAccounts) reflect every transaction up to AsOf and none after
// Through, which is above AsOf only when the Snapshotter was applying a
// batch during the read. Committed is the Committed index when the read
// began: a read never sees a transaction above it, and Committed - AsOf is
// how far behind the durable state the read may be.
type ReadInfo struct {
	AsOf      TxID
	Through   TxID
	Committed TxID
}

// Cursor continues a read where its previous page ended. It is opaque text
// (URL-safe): pass it back unchanged, with the same filter, for the next
// page. The empty cursor starts at the beginning (or, with Reverse, the
// end). A cursor names the query it came from: another query refuses it.
type Cursor string

// Read kinds, for cursors.
const (
	readAccountTransfers byte = iota + 1
	readAccountBalances
	readQueryTransfers
	readQueryAccounts
)

const cursorVersion = 1

// filterHash identifies a query: the cursor carries it.
type filterHash struct{ h uint64 }

func newFilterHash(kind byte) filterHash {
	return filterHash{h: 14695981039346656037 ^ uint64(kind)}
}

func (f *filterHash) add(vs ...uint64) {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], f.h)
	h.Write(b[:])
	for _, v := range vs {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	f.h = h.Sum64()
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// makeCursor encodes the position after which the next page starts.
func makeCursor(kind byte, f filterHash, pos uint64) Cursor {
	b := make([]byte, 0, 14)
	b = append(b, cursorVersion, kind)
	b = binary.LittleEndian.AppendUint32(b, uint32(f.h))
	b = binary.LittleEndian.AppendUint64(b, pos)
	return Cursor(base64.RawURLEncoding.EncodeToString(b))
}

// parseCursor returns the position of c (0 with no cursor), refusing a
// cursor of another query.
func parseCursor(c Cursor, kind byte, f filterHash) (uint64, error) {
	if c == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(string(c))
	if err != nil || len(b) != 14 || b[0] != cursorVersion || b[1] == 0 || b[1] > readQueryAccounts {
		return 0, filterErr("cursor", "not a cursor of this ledger's reads")
	}
	if b[1] != kind || binary.LittleEndian.Uint32(b[2:]) != uint32(f.h) {
		return 0, filterErr("cursor", "from another query (a cursor continues only the query, with the same filter, that returned it)")
	}
	pos := binary.LittleEndian.Uint64(b[6:])
	if pos == 0 {
		return 0, filterErr("cursor", "position 0")
	}
	return pos, nil
}

// checkPage validates the fields every paged read has.
func checkPage(limit int, minTs, maxTs int64) error {
	if limit < 1 || limit > MaxReadLimit {
		return filterErr("limit", "%d out of [1, %d]", limit, MaxReadLimit)
	}
	if minTs < 0 {
		return filterErr("timestamp_min", "%d is negative", minTs)
	}
	if maxTs < 0 {
		return filterErr("timestamp_max", "%d is negative", maxTs)
	}
	if maxTs != 0 && minTs > maxTs {
		return filterErr("timestamp_min", "%d is after timestamp_max %d (inverted range)", minTs, maxTs)
	}
	return nil
}

// inTime reports whether ts is in [minTs, maxTs], a 0 bound being open.
func inTime(ts, minTs, maxTs int64) bool {
	return ts >= minTs && (maxTs == 0 || ts <= maxTs)
}

// indexRead starts a read of the indexes: it waits, if asked, until the
// index holds transaction waitFor, and returns what the read will see. The
// caller must call l.exit once it is done with pebble.
func (l *Ledger) indexRead(ctx context.Context, waitFor TxID) (ReadInfo, error) {
	if l.ix == nil {
		if err := l.refused(l.state.Load()); err != nil {
			return ReadInfo{}, err
		}
		return ReadInfo{}, ErrIndexOff
	}
	if err := l.waitIndexed(ctx, waitFor); err != nil {
		return ReadInfo{}, err
	}
	if err := l.enter(); err != nil {
		return ReadInfo{}, err
	}
	x := TxID(l.indexed.Load())
	return ReadInfo{AsOf: x, Through: x, Committed: TxID(l.committed.Load())}, nil
}

// waitIndexed waits until the index holds transaction id (0: no wait):
// the Snapshotter writes it a block's worth at a time, or when it runs
// out of work, so its mark may trail Snapshot by up to a block under load.
func (l *Ledger) waitIndexed(ctx context.Context, id TxID) error {
	if id == 0 || TxID(l.indexed.Load()) >= id {
		return nil
	}
	if err := l.refused(l.state.Load()); err != nil {
		return err
	}
	return l.waitFor(ctx, id, &l.ixWaits, l.indexed.Load)
}

// IndexStats reports the indexes: whether they are kept, the first and
// last transaction they hold, and what Open did to bring them up to date.
type IndexStats struct {
	On        bool
	Indexed   TxID          // last transaction indexed (at most a block behind Snapshot while the pipeline runs)
	Written   uint64        // transactions indexed since Open, catch-up included
	CaughtUp  uint64        // transactions Open replayed from the WAL into the index
	Cut       uint64        // transactions Open cut from it (a torn tail's)
	Restarted bool          // Open began the index afresh: the WAL no longer held what it lacked
	CatchUp   time.Duration // time Open spent on the index
}

// IndexStats returns the index's counters (atomic loads).
func (l *Ledger) IndexStats() IndexStats {
	if l.ix == nil {
		return IndexStats{}
	}
	c := l.ixCatch
	return IndexStats{On: true, Indexed: TxID(l.indexed.Load()), Written: l.ix.written.Load(),
		CaughtUp: c.txs, Cut: c.cut, Restarted: c.restarted, CatchUp: c.took}
}
