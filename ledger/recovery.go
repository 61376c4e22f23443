package ledger

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/lanework/lanework/ledger/internal/wal"
	"github.com/lanework/lanework/ringbuf"
)

// recovered is the state Open starts the pipeline from.
type recovered struct {
	last     uint64         // last durable transaction
	snapshot uint64         // tx id S0 of the snapshot loaded (0 if none)
	snapEnd  uint64         // its TxEnd S1: the WAL replays it exactly from there on
	bal      []atomic.Int64 // cells after last: they become the readable cells
	workc    *workCopy      // the working cells being loaded, if Open started it
	accts    *accountTable  // accounts after last: the Transactor's table
	book     *pendingBook   // pending transfers after last: the Transactor's book
	closed   closedBits     // accounts closed by a closing transfer after last: the readable ones
	dedup    *dedup         // Transactor's dedup index after last
	refs     []refEntry     // the dedup window after last, for the Snapshotter
	// replayedRefs are the refs of the transactions replayed after the
	// snapshot, for the durable index (loadRefIndex).
	replayedRefs []refUse
	replayed     uint64        // WAL transactions replayed
	torn         *TornTail     // the torn tail dropped, if any
	segs         []wal.Segment // live WAL segments, oldest first
	unborn       string        // a newest segment whose creation a crash cut short
	snapAccounts uint64        // slots the loaded snapshot holds (1: none but the system account)
	hash         uint64        // chain of every batch's checksum (replicate.go)
	// win tracks, while the replay is inside the loaded snapshot's window
	// (snapshot, snapEnd], every cell an entry touched: its chunk value,
	// and whether that value was one of the cell's values in the window.
	win map[uint64]winAcct
	// The history index's writer, once Open brought it to last
	// (historyrecovery.go), and what that took.
	ix      *indexWriter
	ixCatch catchUpStats
	// walFloor: a follower keeps its WAL from this transaction on, for
	// the history index to catch up from when it leads (0: no floor).
	walFloor uint64
	// replayBatch's scratch, kept across batches.
	txs        *[touchAhead]walTx
	cells      [MaxLegs + 2*maxExpiryPerTx]uint64
	hints      [touchAhead][2]uint64 // touchReplay's slots for replayTx
	plainHints [touchAhead][2]uint64 // applyPipeGroup's for replayPlain
	op         bookOp
	sink       uint64 // keeps touchReplay's loads
	// lastTs is the timestamp of the last transaction replayBatch decoded.
	lastTs int64
}

type winAcct struct {
	chunk   int64
	matched bool
}

// recoveryInfo records what Open recovered, for tests and tools.
type recoveryInfo struct {
	last, snapshot, snapEnd, replayed uint64
	torn                              *TornTail
}

// recoverState loads the newest valid snapshot and replays the WAL after it.
//
// Rules: the WAL is read by wal.Scan's rules (see package wal: only a torn
// tail of the newest segment is dropped; any other damage is a
// *CorruptError naming file, offset and tx range), every batch's CRC and
// structure are verified, and every entry's resulting balance must equal the
// replayed balance plus its delta, except for an account's first entry
// inside the snapshot's window (below), which sets it. A torn tail the
// snapshot's window reaches was synced before the manifest: damage. A gap
// in ids or a non-zero balance sum refuses too. recoverState writes nothing.
//
// A snapshot is fuzzy: its chunks were read while the Snapshotter applied
// (S0, S1], so an account's chunk value is its balance after S0 or after one
// of its entries in (S0, S1]. Replaying (S0, S1] by setting each entry's
// resulting balance (idempotent) leaves every account that has an entry there
// at its last one, and every other account did not change during the copy,
// so its chunk value is right: the state after S1 is exact. The replay also
// checks that each such account's chunk value was one of its balances in the
// window and that the balances sum to zero after S1.
func recoverState(db *pebble.DB, cfg *Config) (*recovered, error) {
	return recoverStateIn(db, cfg, newRecoveryMem(cfg.MaxAccounts), false)
}

// recoverStateIn is recoverState in mem, allocated for cfg.MaxAccounts
// and not used before. With workAhead it starts the working cells' copy
// (rs.workc) once the replay is done, beside the checks after it; on an
// error it waits for the copy before it returns.
func recoverStateIn(db *pebble.DB, cfg *Config, mem *recoveryMem, workAhead bool) (*recovered, error) {
	rs := &recovered{snapAccounts: 1, bal: mem.bal, accts: mem.accts, dedup: newDedup(cfg.DedupWindow),
		book: newPendingBook(fateRetentionOf(cfg)), closed: mem.closed}
	if err := loadNewestSnapshot(db, cfg, rs); err != nil {
		return nil, err
	}
	if err := replayWAL(db, cfg, rs); err != nil {
		return nil, err
	}
	if workAhead {
		rs.workc = copyWorkAhead(cfg.MaxAccounts, rs)
	}
	if err := rs.checkReplayed(); err != nil {
		rs.workc.wait()
		return nil, err
	}
	// The Snapshotter's window is the Transactor's, in id order.
	rs.dedup.fifo.trim(rs.last+1, rs.dedup.forget)
	rs.refs = rs.dedup.fifo.entries()
	return rs, nil
}

// checkReplayed checks the state the replay reached: every transaction
// the snapshot holds replayed, zero sums, and pending columns that are
// the sums of the open pending transfers. It only reads rs.
func (rs *recovered) checkReplayed() error {
	if rs.last < rs.snapEnd {
		return &CorruptError{Key: idKey(prefixSnapshot, rs.snapshot), FirstTx: TxID(rs.last + 1), LastTx: TxID(rs.snapEnd),
			Reason: fmt.Sprintf("transactions missing from the WAL: snapshot %d holds balances up to tx %d", rs.snapshot, rs.snapEnd)}
	}
	if err := zeroSum(rs.bal); err != nil {
		return &CorruptError{File: walDir, LastTx: TxID(rs.last), Reason: err.Error() + " after replay"}
	}
	if err := pendingSums(rs.bal, rs.accts, rs.book); err != nil {
		return &CorruptError{File: walDir, LastTx: TxID(rs.last), Reason: err.Error() + " after replay"}
	}
	return nil
}

// zeroSum checks the ledger's invariant over all cells: debits_posted and
// credits_posted sum to the same, and so do the pending columns. The sums
// wrap; equal true sums wrap to equal values.
func zeroSum(cells []atomic.Int64) error {
	var s [numColumns]uint64
	for i := range cells {
		s[uint64(i)%cellsPerAccount] += uint64(cells[i].Load())
	}
	if s[DebitsPosted] != s[CreditsPosted] || s[DebitsPending] != s[CreditsPending] {
		return fmt.Errorf("debits and credits differ (posted %d/%d, pending %d/%d)", s[DebitsPosted], s[CreditsPosted], s[DebitsPending], s[CreditsPending])
	}
	return nil
}

func loadNewestSnapshot(db *pebble.DB, cfg *Config, rs *recovered) error {
	it, err := prefixIter(db, prefixSnapshot)
	if err != nil {
		return err
	}
	defer it.Close()
	put := func(first uint64, cells []int64) {
		for i, c := range cells {
			rs.bal[first+uint64(i)].Store(c)
		}
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		id, ok := parseIDKey(prefixSnapshot, it.Key())
		if !ok {
			continue
		}
		accts := rs.accts // empty: a failed snapshot's is replaced below
		info, err := readSnapshot(db, cfg.MaxAccounts, id, it.Value(), put, func(m acctMeta) error { return insertRecovered(accts, m) })
		if err == nil {
			if info.book == nil {
				info.book = newPendingBook(fateRetentionOf(cfg))
			}
			info.book.keep = fateRetentionOf(cfg)
			for s := range info.book.closed {
				if s >= accts.n {
					err = fmt.Errorf("closed account slot %d beyond the snapshot's %d accounts", s, accts.n)
				}
			}
		}
		if err == nil {
			for s := range info.book.closed {
				accts.setClosed(s, true)
				rs.closed.set(s, true)
			}
			rs.book = info.book
			rs.accts = accts
			d := newDedup(cfg.DedupWindow)
			for _, r := range info.refs {
				d.add(r.id, r.ref)
			}
			rs.dedup, rs.last, rs.snapshot, rs.snapEnd, rs.snapAccounts = d, id, id, info.end, accts.n
			if info.end > id {
				rs.win = make(map[uint64]winAcct)
			}
			return nil
		}
		// An invalid snapshot is skipped: the previous one, and the WAL
		// retained after it, reproduce the same state. It may have stored
		// some of its chunks: every chunk of the next one overwrites them,
		// and without one the replay starts from zero.
		for i := range rs.bal {
			rs.bal[i].Store(0)
		}
		if accts.n != 1 {
			rs.accts = newAccountTable(cfg.MaxAccounts)
		}
	}
	return it.Error()
}

// insertRecovered adds an account read from a snapshot or the WAL.
func insertRecovered(t *accountTable, m acctMeta) error {
	if m.id == SystemAccount {
		return errors.New("account 0 created")
	}
	// One probe sequence: the check's ends where the insert goes.
	i, dup := t.find(m.id)
	if dup {
		return fmt.Errorf("account %d created twice", m.id)
	}
	if t.full() {
		return fmt.Errorf("account %d beyond MaxAccounts", m.id)
	}
	t.insertAt(i, m)
	return nil
}

// snapInfo is what a valid snapshot's manifest and dedup chunk say.
type snapInfo struct {
	end  uint64 // TxEnd (S1); equal to the id for an exact snapshot
	refs []refEntry
	book *pendingBook // nil before manifest version 4
}

// readSnapshot checks snapshot id as Open loads it — the manifest, the
// account records of its slots (1 .. accounts-1, each present), every cell
// chunk (checksum, header, full coverage of the 4 x accounts cells), the
// dedup window, and for an exact snapshot (TxEnd equal to its id) the zero
// sums — passes each account to putAcct in slot order and each chunk's
// cells to put as they are read (from cell first on). An error may come
// after some were passed.
func readSnapshot(db *pebble.DB, maxAccounts, id uint64, val []byte, put func(first uint64, cells []int64), putAcct func(acctMeta) error) (snapInfo, error) {
	m, err := decodeManifest(val)
	if err != nil {
		return snapInfo{}, err
	}
	if m.FormatVersion != manifestVersion && m.FormatVersion != manifestVersionV3 {
		return snapInfo{}, fmt.Errorf("manifest format version %d", m.FormatVersion)
	}
	end := m.TxEnd
	if m.TxID != id || end < id || m.MaxAccounts != maxAccounts || m.ChunkAccounts != snapChunkAccounts ||
		m.Accounts < 1 || m.Accounts > maxAccounts || uint64(m.Chunks) != (cellsPerAccount*m.Accounts+snapChunkAccounts-1)/snapChunkAccounts {
		return snapInfo{}, errors.New("manifest does not match")
	}
	if err := readAccountRecords(db, m.Accounts, putAcct); err != nil {
		return snapInfo{}, err
	}
	cells := cellsPerAccount * m.Accounts
	var sum [numColumns]uint64
	var buf []int64
	for i := uint32(0); i < m.Chunks; i++ {
		v, closer, err := db.Get(chunkKey(id, i))
		if err != nil {
			return snapInfo{}, err
		}
		first := uint64(i) * snapChunkAccounts
		buf, err = decodeCellChunk(v, first, min(snapChunkAccounts, cells-first), buf[:0])
		closer.Close()
		if err != nil {
			return snapInfo{}, fmt.Errorf("chunk %d: %w", i, err)
		}
		for j, c := range buf {
			sum[(first+uint64(j))%cellsPerAccount] += uint64(c)
		}
		put(first, buf)
	}
	if end == id && (sum[DebitsPosted] != sum[CreditsPosted] || sum[DebitsPending] != sum[CreditsPending]) {
		return snapInfo{}, errors.New("snapshot debits and credits differ")
	}
	v, closer, err := db.Get(chunkKey(id, refsChunk))
	if err != nil {
		return snapInfo{}, err
	}
	refs, err := decodeRefsChunk(v)
	closer.Close()
	if err != nil {
		return snapInfo{}, err
	}
	if uint64(len(refs)) != m.Refs {
		return snapInfo{}, errors.New("refs count does not match manifest")
	}
	for i, r := range refs {
		if r.id > id || r.ref == 0 || (i > 0 && r.id <= refs[i-1].id) {
			return snapInfo{}, errors.New("refs out of order")
		}
	}
	info := snapInfo{end: end, refs: refs}
	if m.FormatVersion >= 4 {
		v, closer, err := db.Get(chunkKey(id, pendingChunk))
		if err != nil {
			return snapInfo{}, err
		}
		info.book, err = decodePendingBook(v, fateRetention{}, m.Accounts, id)
		closer.Close()
		if err != nil {
			return snapInfo{}, fmt.Errorf("pending book: %w", err)
		}
	}
	return info, nil
}

// replayBatch applies the transactions of b after rs.last. Outside the
// snapshot's window it checks every entry before changing rs, per
// transaction; inside it, an error (always fatal) may leave rs half changed.
//
// It decodes up to touchAhead transactions, touches what they will read
// (touchReplay), then applies them: the cache misses of a group overlap,
// as the Transactor's touch makes them (execute.go). A decoding error is
// returned after the transactions before it applied, as if decoded one by
// one.
func replayBatch(b *batchReader, rs *recovered) error {
	if rs.txs == nil {
		rs.txs = new([touchAhead]walTx)
	}
	txs := rs.txs
	for {
		n := 0
		var derr error
		for n < len(txs) {
			ok, err := b.next(&txs[n])
			if err != nil || !ok {
				derr = err
				break
			}
			n++
		}
		if err := rs.applyGroup(txs[:n]); err != nil {
			return err
		}
		if derr != nil || n < len(txs) {
			return derr
		}
	}
}

// applyGroup touches what txs will read, then replays them in order.
func (rs *recovered) applyGroup(txs []walTx) error {
	if len(txs) == 0 {
		return nil
	}
	rs.lastTs = txs[len(txs)-1].ts
	rs.touchReplay(txs)
	for i := range txs {
		if err := replayTx(&txs[i], rs, &rs.hints[i]); err != nil {
			return err
		}
	}
	return nil
}

// touchReplay loads what replayTx will read for txs, in the two rounds of
// the Transactor's touch: each account's index entry at its home (with
// the account a creation inserts), then through those entries each
// account's cells. Loads only: a follower's readers may run beside it.
func (rs *recovered) touchReplay(txs []walTx) {
	t := rs.accts
	var s uint64
	for i := range txs {
		x := &txs[i]
		if x.kind == KindCreateAccount {
			s += t.peekHome(x.acct.id)
		}
		for j := 0; j < x.n; j++ {
			s += t.peekHome(x.account(j))
		}
	}
	for i := range txs {
		x := &txs[i]
		h := &rs.hints[i]
		*h = [2]uint64{}
		for j := 0; j < x.n; j++ {
			sl, home := t.peekSlot(x.account(j))
			if home && j < len(h) {
				h[j] = sl + 1
			}
			s += uint64(rs.bal[cellsPerAccount*sl].Load())
		}
	}
	rs.sink += s
}

// replayTx applies t if it follows rs.last (see replayBatch). hint holds
// the slots of its first two entries plus one, as the touch found them at
// their homes (0: not found, look up): ids never move.
func replayTx(t *walTx, rs *recovered, hint *[2]uint64) error {
	if t.id <= rs.last {
		return nil
	}
	if t.id != rs.last+1 {
		return fmt.Errorf("tx %d follows %d", t.id, rs.last)
	}
	if t.kind == KindCreateAccount && t.fail == OK {
		if err := insertRecovered(rs.accts, t.acct); err != nil {
			return fmt.Errorf("tx %d: %w", t.id, err)
		}
	}
	cells := &rs.cells
	for i := 0; i < t.n; i++ {
		e := t.entry(i)
		var s uint64
		if i < len(hint) && hint[i] != 0 {
			s = hint[i] - 1
		} else {
			var ok bool
			if s, ok = rs.accts.slot(e.Account); !ok {
				return fmt.Errorf("tx %d: account %d was never created", t.id, e.Account)
			}
		}
		cells[i] = cell(s, e.Column)
	}
	if t.bookOp(&rs.op, cells[:t.n]) {
		if err := rs.book.applyOp(&rs.op, rs.setClosed); err != nil {
			return err
		}
	}
	if t.id <= rs.snapEnd {
		if err := replayWindowTx(t, cells[:t.n], rs); err != nil {
			return err
		}
	} else {
		// Entries of one tx may repeat a cell: verify while applying,
		// and undo on mismatch.
		for i := 0; i < t.n; i++ {
			e := t.entry(i)
			if cur, ok := rs.applyEntry(cells[i], e.Delta, e.Value); !ok {
				for j := i - 1; j >= 0; j-- {
					rs.store(cells[j], rs.bal[cells[j]].Load()-t.entry(j).Delta)
				}
				return entryMismatch(t.id, e.Account, e.Column, cur, e.Delta, e.Value)
			}
		}
	}
	if t.userRef != 0 && t.fail != Duplicate {
		rs.dedup.fifo.trim(t.id, rs.dedup.forget)
		rs.dedup.add(t.id, t.userRef)
		rs.replayedRefs = append(rs.replayedRefs, refUse{id: t.id, ref: t.userRef, ts: t.ts})
	}
	rs.last = t.id
	rs.replayed++
	if rs.last == rs.snapEnd && rs.win != nil {
		if err := finishWindow(rs); err != nil {
			return err
		}
	}
	return nil
}

// applyEntry sets cell c to its value plus delta if that is value, and
// returns the value it held and whether it did.
func (rs *recovered) applyEntry(c uint64, delta, value int64) (int64, bool) {
	cur := rs.bal[c].Load()
	if nv, ok := addInt64(cur, delta); !ok || nv != value {
		return cur, false
	}
	rs.store(c, value)
	return cur, true
}

func entryMismatch(id, acct uint64, col Column, cur, delta, value int64) error {
	return fmt.Errorf("tx %d: account %d %v %d%+d recorded as %d", id, acct, col, cur, delta, value)
}

// replayWindowTx applies a transaction inside the loaded snapshot's window
// by setting each entry's resulting value. A cell's first entry in the
// window cannot be checked against its chunk value (the chunk may have been
// read after later entries); it records whether the chunk value was the
// cell's value before the entry or after it. Later entries check as
// outside the window, and may match the chunk value too.
func replayWindowTx(t *walTx, cells []uint64, rs *recovered) error {
	for i := 0; i < t.n; i++ {
		e := t.entry(i)
		c := cells[i]
		st, seen := rs.win[c]
		if !seen {
			prev, ok := subInt64(e.Value, e.Delta)
			if !ok {
				return fmt.Errorf("tx %d: account %d %v %d recorded after delta %+d", t.id, e.Account, e.Column, e.Value, e.Delta)
			}
			st.chunk = rs.bal[c].Load()
			st.matched = st.chunk == prev || st.chunk == e.Value
		} else {
			cur := rs.bal[c].Load()
			if nv, ok := addInt64(cur, e.Delta); !ok || nv != e.Value {
				return fmt.Errorf("tx %d: account %d %v %d%+d recorded as %d", t.id, e.Account, e.Column, cur, e.Delta, e.Value)
			}
			st.matched = st.matched || st.chunk == e.Value
		}
		rs.win[c] = st
		rs.store(c, e.Value)
	}
	return nil
}

// finishWindow runs once the replay reaches the snapshot's TxEnd: every
// cell touched in the window must have had its chunk value at some point
// of it, and the cells, now exact, must sum to zero.
func finishWindow(rs *recovered) error {
	key := idKey(prefixSnapshot, rs.snapshot)
	for c, st := range rs.win {
		if !st.matched {
			return &CorruptError{Key: key, FirstTx: TxID(rs.snapshot + 1), LastTx: TxID(rs.snapEnd),
				Reason: fmt.Sprintf("account %d %v is %d in snapshot %d, never its value in txs %d..%d",
					rs.accts.meta[c/cellsPerAccount].id, Column(c%cellsPerAccount), st.chunk, rs.snapshot, rs.snapshot+1, rs.snapEnd)}
		}
	}
	rs.win = nil
	if err := zeroSum(rs.bal); err != nil {
		return &CorruptError{Key: key, FirstTx: TxID(rs.snapshot + 1), LastTx: TxID(rs.snapEnd),
			Reason: fmt.Sprintf("%v after replaying snapshot %d through tx %d", err, rs.snapshot, rs.snapEnd)}
	}
	return nil
}

// store sets cell c to v with a release store, as the Snapshotter's
// Ledger.storeCell (see there why that is enough): the replay is the cells'
// only writer, before the stages start or in a follower's Apply.
func (rs *recovered) store(c uint64, v int64) {
	ringbuf.StoreRelease((*atomic.Uint64)(unsafe.Pointer(&rs.bal[c])), uint64(v))
}

// setClosed sets account slot s's closed state (a closing transfer, its
// void or expiry) in the Transactor's table and the readable bits.
func (rs *recovered) setClosed(s uint64, on bool) {
	rs.accts.setClosed(s, on)
	rs.closed.set(s, on)
}

// pendingSums checks that every account's pending columns are the sums of
// the open pending transfers that name it.
func pendingSums(bal []atomic.Int64, accts *accountTable, b *pendingBook) error {
	sums := b.sums()
	for s := uint64(0); s < accts.n; s++ {
		want := sums[s]
		dp, cp := uint64(bal[cell(s, DebitsPending)].Load()), uint64(bal[cell(s, CreditsPending)].Load())
		if dp != want[0] || cp != want[1] {
			return fmt.Errorf("account %d holds debits_pending %d and credits_pending %d, its open pending transfers %d and %d",
				accts.meta[s].id, dp, cp, want[0], want[1])
		}
	}
	return nil
}

// subInt64 returns a-b and whether it did not overflow.
func subInt64(a, b int64) (int64, bool) {
	s := a - b
	return s, (a^b)&(a^s) >= 0
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// readAccountRecords passes the accounts of slots 1 .. accounts-1 to put
// in slot order; every one must be present. Where records overlap, the one
// with the later first slot holds the current accounts (Open deletes every
// record from the first slot it rewrites, and records are written in slot
// order after that), so a record is read only up to the next one's first
// slot. Later slots (written for creations a later snapshot, or a cut log,
// does not cover) are not read: the replay creates those accounts again.
func readAccountRecords(db *pebble.DB, accounts uint64, put func(acctMeta) error) error {
	if accounts <= 1 {
		return nil
	}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: idKey(prefixAccount, 1), UpperBound: idKey(prefixAccount, accounts)})
	if err != nil {
		return err
	}
	defer it.Close()
	want := uint64(1)
	var cur []acctMeta // the record being read, of slots first ..
	var first uint64
	// upTo puts cur's accounts of slots want .. end-1.
	upTo := func(end uint64) error {
		for ; want < end; want++ {
			if want-first >= uint64(len(cur)) {
				return fmt.Errorf("account record of slot %d missing", want)
			}
			if err := put(cur[want-first]); err != nil {
				return fmt.Errorf("account record of slot %d: %w", want, err)
			}
		}
		return nil
	}
	for ok := it.First(); ok; ok = it.Next() {
		s, ok := parseIDKey(prefixAccount, it.Key())
		if !ok {
			return fmt.Errorf("account record of slot %d missing", want)
		}
		if err := upTo(s); err != nil {
			return err
		}
		if cur, err = decodeAccountRecord(it.Value()); err != nil {
			return fmt.Errorf("account record of slot %d: %w", s, err)
		}
		first = s
	}
	if err := it.Error(); err != nil {
		return err
	}
	return upTo(accounts)
}

// accountRecordsHold reports whether the account records already read
// (as readAccountRecords reads them: each record up to the next one's first
// slot) as writeAccountRecords(db, t, from, true) would leave them: t's
// accounts in every slot from .. t.n-1, and no record starting at t.n or
// later (a stale one the rewrite deletes; one that starts before from the
// rewrite keeps too). Open then skips the rewrite: without a snapshot it
// rewrote every account at each Open, and pebble replayed them at the next.
func accountRecordsHold(db *pebble.DB, t *accountTable, from uint64) (bool, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: idKey(prefixAccount, 1), UpperBound: prefixEnd(prefixAccount)})
	if err != nil {
		return false, err
	}
	defer it.Close()
	end := from // the end of the slots the last record read holds
	ok := it.SeekLT(idKey(prefixAccount, from+1))
	if !ok {
		ok = it.First()
	}
	for ; ok; ok = it.Next() {
		first, ok := parseIDKey(prefixAccount, it.Key())
		if !ok || first >= t.n || first > from && end < first {
			return false, nil
		}
		b, err := openRecord(it.Value())
		if err != nil || len(b)%accountLen != 0 {
			return false, nil // the rewrite replaces it
		}
		end = first + uint64(len(b)/accountLen)
		if lo, hi := max(first, from), min(end, t.n); lo < hi && !accountsEqual(b[(lo-first)*accountLen:(hi-first)*accountLen], t.meta[lo:hi]) {
			return false, nil
		}
	}
	if err := it.Error(); err != nil {
		return false, err
	}
	return from >= t.n || end >= t.n, nil
}

// writeAccountRecords writes the account records of slots from .. the
// table's last (unsynced, like the Snapshotter's), at most snapshotterRun
// accounts each. With rewrite it first deletes every record whose first
// slot is from or later (Open's, so that no record of a slot the replay
// reassigns outlives it; see readAccountRecords).
func writeAccountRecords(db *pebble.DB, t *accountTable, from uint64, rewrite bool) error {
	if from >= t.n && !rewrite {
		return nil
	}
	b := db.NewBatch()
	defer b.Close()
	if rewrite {
		if err := b.DeleteRange(idKey(prefixAccount, from), prefixEnd(prefixAccount), nil); err != nil {
			return err
		}
	}
	for s := from; s < t.n; s += snapshotterRun {
		end := min(s+snapshotterRun, t.n)
		if err := b.Set(idKey(prefixAccount, s), encodeAccountRecord(t.meta[s:end]...), nil); err != nil {
			return err
		}
	}
	return b.Commit(pebble.NoSync)
}
