package ledger

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lanework/lanework/ledger/internal/wal"
)

// verifyReport is what verifyDir found in a ledger directory; package
// inspect presents it (inspect.VerifyReport documents the fields).
type verifyReport struct {
	MaxAccounts  uint64
	FirstTx      TxID // first transaction in the WAL; 0 if the WAL is empty
	LastTx       TxID // last transaction in a decodable WAL batch
	Batches      int  // WAL batches read, the torn tail included
	Transactions uint64
	// FromZero is true when the WAL starts at transaction 1, so every
	// resulting balance was checked against a replay from zero.
	FromZero bool
	// TornTail is the torn tail of the newest WAL segment (the remains of
	// a write cut short by a crash, never acknowledged), nil if none. Open
	// drops it; verifyDir does not count it as a finding.
	TornTail  *TornTail
	Snapshots []snapshotCheck
	// Findings lists every inconsistency in the order found: the WAL's and
	// the store's, then the history index's (verifyKept). verifyDir returns a
	// non-nil error exactly when it is non-empty.
	Findings []*CorruptError
	// KeptSegments and RefBlocks count what verifyKept checked: the
	// kept segments not in wal/, and the index's reference blocks.
	KeptSegments int
	RefBlocks    int
	truncations  []truncation // by ledger recover, oldest first
}

// snapshotCheck is the verdict on one persisted snapshot.
type snapshotCheck struct {
	TxID TxID
	// Valid: the manifest, every chunk checksum, the zero balance sum and
	// the dedup window verify, so Open could load it.
	Valid bool
	// Replayed: the WAL covers the snapshot and its balances equal the
	// replay up to TxID. A valid snapshot older than the retained WAL
	// cannot be compared.
	Replayed bool
}

// verifyDir checks a closed ledger directory without changing it: the meta
// record; every WAL batch's checksum and structure; contiguous transaction
// ids; the zero sum of every transaction; that every entry's resulting
// balance continues the account's previous one; every snapshot, and that it
// equals the WAL replay up to its transaction; the durable idempotency index
// against the WAL's refs (refCheck); with the history index, its kept
// segments and reference blocks (verifyKept). It reads past damage to find
// all of it. The error is nil if the report has no findings; otherwise it
// joins the findings (each a *CorruptError, matching ErrCorrupt). Errors
// opening the directory are returned with a nil report; a directory of
// another format version fails with ErrIncompatible.
func verifyDir(fs vfs.FS, dir string) (*verifyReport, error) {
	if fs == nil {
		fs = vfs.Default
	}
	db, m, err := openOffline(fs, dir)
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			return &verifyReport{Findings: []*CorruptError{ce}}, err
		}
		return nil, err
	}
	defer db.Close()
	cells := cellsPerAccount * m.MaxAccounts
	v := &verifier{rep: &verifyReport{MaxAccounts: m.MaxAccounts}, bal: make([]int64, cells), known: make([]bool, cells),
		slots: map[uint64]uint64{SystemAccount: 0}, ledgers: []uint32{0}}
	if err := v.loadSnapshots(db); err != nil {
		return nil, err
	}
	refs, err := newRefCheck(v, db)
	if err != nil {
		return nil, err
	}
	err = v.scan(fs, dir, db, refs)
	if cerr := refs.finish(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	cfg, err := (&Config{FS: fs, Dir: dir, MaxAccounts: m.MaxAccounts}).withDefaults()
	if err != nil {
		return nil, err
	}
	if v.rep.truncations, err = readTruncations(db); err != nil {
		var ce *CorruptError
		if !errors.As(err, &ce) {
			return nil, err
		}
		v.rep.Findings = append(v.rep.Findings, ce)
	}
	for _, s := range v.active {
		v.finding(keyLoc(idKey(prefixSnapshot, s.id)), s.id+1, s.end, "the WAL ends at tx %d, inside snapshot %d's window up to tx %d", v.last, s.id, s.end)
	}
	for _, s := range v.snaps[v.next:] {
		v.finding(keyLoc(idKey(prefixSnapshot, s.id)), s.id, s.end, "snapshot is newer than the WAL")
	}
	if v.nKnown == uint64(len(v.bal)) {
		v.checkSums()
	}
	v.checkLedgerSums()
	if len(v.rep.Findings) == 0 {
		// The pending columns against the open pending transfers: the
		// recovery's replay rebuilds the book and checks them.
		if _, err := recoverState(db, &cfg); err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				return nil, err
			}
			v.rep.Findings = append(v.rep.Findings, ce)
		}
	}
	if err := v.verifyKept(&cfg); err != nil {
		return nil, err
	}
	errs := make([]error, len(v.rep.Findings))
	for i, f := range v.rep.Findings {
		errs[i] = f
	}
	return v.rep, errors.Join(errs...)
}

type snapState struct {
	id    uint64  // S0
	end   uint64  // S1 (TxEnd); id for an exact snapshot
	bal   []int64 // cells
	accts []acctMeta
	refs  []refEntry
	rep   int // index in verifyReport.Snapshots
	// While the replay is in (id, end]: accounts whose chunk value was not
	// their replayed balance at id, and must be one of their resulting
	// balances in the window; and whether the snapshot can still be
	// Replayed (the replay knew every balance at id).
	pending  map[uint64]int64
	complete bool
}

// verifier replays the WAL tracking which balances are known: all of them
// from transaction 1 or a snapshot, none after a damaged stretch until an
// account's next entry (or a snapshot) re-anchors it.
type verifier struct {
	rep   *verifyReport
	bal   []int64 // cells, 4 per account slot
	known []bool
	// slots maps the account ids the replay or a snapshot created to their
	// slots; ledgers holds each slot's ledger.
	slots   map[uint64]uint64
	ledgers []uint32
	// allAccounts: slots holds every account created so far (the replay
	// started at transaction 1, or a snapshot told); before that, entries
	// for unknown accounts are not findings and creations are not learned
	// (their slots are not known).
	allAccounts bool
	nKnown      uint64
	last        uint64 // last transaction replayed
	snaps       []snapState
	next        int // first snapshot not yet reached by the replay
	// active are the fuzzy snapshots whose window the replay is in.
	active []*snapState
	// moved sums, per ledger, the deltas of the transactions replayed by
	// column (an entry of the system account counts in the ledger of the
	// other accounts of its transaction, or of its expiry release).
	moved map[uint32]*[numColumns]int64
	// anchored holds the chunk values of accounts whose balance the replay
	// learned from a fuzzy snapshot, until their first entry in its window:
	// that entry sets the balance (the chunk may be newer than id).
	anchored map[uint64]int64
}

// loc is where a finding is: a file and offset, or a pebble key.
type loc struct {
	file string
	off  int64
	key  []byte
}

func keyLoc(k []byte) loc { return loc{key: clone(k)} }

func (v *verifier) finding(at loc, first, last uint64, format string, args ...any) {
	v.rep.Findings = append(v.rep.Findings, &CorruptError{File: at.file, Offset: at.off, Key: at.key, FirstTx: TxID(first), LastTx: TxID(last), Reason: fmt.Sprintf(format, args...)})
}

func (v *verifier) forget() {
	clear(v.known)
	v.nKnown = 0
}

func (v *verifier) learn(a uint64, b int64) {
	if !v.known[a] {
		v.known[a] = true
		v.nKnown++
	}
	v.bal[a] = b
}

// loadSnapshots checks every snapshot as Open would and keeps the valid
// ones, in id order, for comparison with the replay.
func (v *verifier) loadSnapshots(db *pebble.DB) error {
	it, err := prefixIter(db, prefixSnapshot)
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		id, ok := parseIDKey(prefixSnapshot, it.Key())
		if !ok {
			v.finding(keyLoc(it.Key()), 0, 0, "malformed snapshot key")
			continue
		}
		v.rep.Snapshots = append(v.rep.Snapshots, snapshotCheck{TxID: TxID(id)})
		bal := make([]int64, cellsPerAccount*v.rep.MaxAccounts)
		var accts []acctMeta
		info, err := readSnapshot(db, v.rep.MaxAccounts, id, it.Value(), func(first uint64, cells []int64) {
			copy(bal[first:], cells)
		}, func(m acctMeta) error { accts = append(accts, m); return nil })
		if err != nil {
			v.finding(keyLoc(it.Key()), id, id, "snapshot: %v", err)
			continue
		}
		v.rep.Snapshots[len(v.rep.Snapshots)-1].Valid = true
		v.snaps = append(v.snaps, snapState{id: id, end: info.end, bal: bal, accts: accts, refs: info.refs, rep: len(v.rep.Snapshots) - 1})
	}
	return it.Error()
}

// coveredTo is the highest transaction a valid snapshot proves was synced.
func (v *verifier) coveredTo() uint64 {
	var c uint64
	for _, s := range v.snaps {
		c = max(c, s.end)
	}
	return c
}

// reachSnapshots compares every snapshot up to the replayed transaction
// with the replay, and adopts its balances where the replay knows none. An
// exact snapshot must equal the replay; a fuzzy one opens a window (id, end]
// in which every differing chunk value must turn up as a resulting balance.
func (v *verifier) reachSnapshots(refOf func(uint64) (uint64, bool)) {
	for ; v.next < len(v.snaps) && v.snaps[v.next].id <= v.last; v.next++ {
		s := &v.snaps[v.next]
		if s.id < v.last {
			continue // before the retained WAL, or inside a damaged stretch
		}
		v.adoptAccounts(s)
		s.complete = v.nKnown == uint64(len(v.bal))
		fuzzy := s.end > s.id
		mismatch := 0
		for a, b := range s.bal {
			switch {
			case !v.known[a]:
				if fuzzy {
					if v.anchored == nil {
						v.anchored = map[uint64]int64{}
					}
					v.anchored[uint64(a)] = b
				}
				v.learn(uint64(a), b)
			case v.bal[a] == b:
			case fuzzy:
				if s.pending == nil {
					s.pending = map[uint64]int64{}
				}
				s.pending[uint64(a)] = b
			default:
				if mismatch == 0 {
					v.finding(keyLoc(idKey(prefixSnapshot, s.id)), s.id, s.id, "cell %d is %d in the snapshot, %d in the WAL replay", a, b, v.bal[a])
				}
				mismatch++
			}
		}
		for _, r := range s.refs {
			if ref, ok := refOf(r.id); ok && ref != r.ref {
				v.finding(keyLoc(idKey(prefixSnapshot, s.id)), s.id, s.id, "dedup window names ref %d for tx %d, the WAL %d", r.ref, r.id, ref)
				break
			}
		}
		if fuzzy {
			v.active = append(v.active, s)
			continue
		}
		v.rep.Snapshots[s.rep].Replayed = s.complete && mismatch == 0
	}
}

// windowEntry checks entry e of transaction id against the open windows.
// It returns false if the entry's balance must not be checked against the
// replay (the account's value came from a fuzzy chunk).
func (v *verifier) windowEntry(cl uint64, e Entry) (check bool) {
	check = true
	if c, ok := v.anchored[cl]; ok {
		delete(v.anchored, cl)
		check = false
		if prev, ok := subInt64(e.Value, e.Delta); !ok || (c != prev && c != e.Value) {
			for _, s := range v.active {
				if s.pending == nil {
					s.pending = map[uint64]int64{}
				}
				s.pending[cl] = c
			}
		}
	}
	for _, s := range v.active {
		if c, ok := s.pending[cl]; ok && c == e.Value {
			delete(s.pending, cl)
		}
	}
	return check
}

// adoptAccounts checks a snapshot's accounts against those the replay
// knows (the same ids in the same slots) and learns the ones it does not.
func (v *verifier) adoptAccounts(s *snapState) {
	v.allAccounts = true
	for i, m := range s.accts {
		slot := uint64(i) + 1
		if slot < uint64(len(v.ledgers)) {
			if got, ok := v.slots[m.id]; !ok || got != slot {
				v.finding(keyLoc(idKey(prefixSnapshot, s.id)), s.id, s.id, "account %d is in slot %d of the snapshot, not of the WAL replay", m.id, slot)
				return
			}
			continue
		}
		v.createAccount(m)
	}
}

func (v *verifier) createAccount(m acctMeta) bool {
	if _, ok := v.slots[m.id]; ok || uint64(len(v.ledgers)) == v.rep.MaxAccounts {
		return false
	}
	v.slots[m.id] = uint64(len(v.ledgers))
	v.ledgers = append(v.ledgers, m.ledger)
	return true
}

// checkSums checks the zero sums over all cells and per ledger. The system
// account belongs to every ledger: per ledger, debits and credits of its
// other accounts may differ by what the system account moved in or out of
// it, so per ledger verify checks what transfers keep (posted and pending
// apart, the net of the non-system accounts adds up with the system
// account's over all ledgers) by the global sums.
func (v *verifier) checkSums() {
	var s [numColumns]uint64
	for c, b := range v.bal {
		s[uint64(c)%cellsPerAccount] += uint64(b)
	}
	if s[DebitsPosted] != s[CreditsPosted] || s[DebitsPending] != s[CreditsPending] {
		v.finding(loc{file: walDir}, 0, uint64(v.rep.LastTx), "debits and credits differ after replay (posted %d/%d, pending %d/%d)",
			s[DebitsPosted], s[CreditsPosted], s[DebitsPending], s[CreditsPending])
	}
}

// addMoved adds the deltas of t's entries before end, back to the previous
// group boundary, to ledger's sums (0: none yet).
func (v *verifier) addMoved(t *walTx, end int, ledger uint32) {
	start := 0
	if end > t.nexp {
		start = t.nexp
	} else if end >= 2 {
		start = end - 2
	}
	if end <= start || end > t.n {
		return
	}
	if v.moved == nil {
		v.moved = map[uint32]*[numColumns]int64{}
	}
	m := v.moved[ledger]
	if m == nil {
		m = new([numColumns]int64)
		v.moved[ledger] = m
	}
	for i := start; i < end; i++ {
		e := t.entry(i)
		m[e.Column] += e.Delta
	}
}

// checkLedgerSums checks, per ledger, that the transactions replayed moved
// as much to debits as to credits, posted and pending apart: every
// transaction stays in one ledger (the system account belongs to all).
func (v *verifier) checkLedgerSums() {
	for l, m := range v.moved {
		if m[DebitsPosted] != m[CreditsPosted] || m[DebitsPending] != m[CreditsPending] {
			v.finding(loc{file: walDir}, 0, uint64(v.rep.LastTx), "ledger %d: the replayed transactions moved debits and credits that differ (posted %d/%d, pending %d/%d)",
				l, m[DebitsPosted], m[CreditsPosted], m[DebitsPending], m[CreditsPending])
		}
	}
}

// closeWindows ends the windows the replay has passed.
func (v *verifier) closeWindows() {
	keep := v.active[:0]
	for _, s := range v.active {
		if s.end > v.last {
			keep = append(keep, s)
			continue
		}
		for a, c := range s.pending {
			v.finding(keyLoc(idKey(prefixSnapshot, s.id)), s.id+1, s.end, "cell %d is %d in the snapshot, never its value in txs %d..%d of the WAL replay", a, c, s.id+1, s.end)
			break
		}
		v.rep.Snapshots[s.rep].Replayed = s.complete && len(s.pending) == 0
	}
	v.active = keep
	if len(v.active) == 0 {
		v.anchored = nil // untouched in the window: the chunk value is exact
	}
}

func (v *verifier) scan(fs vfs.FS, dir string, db *pebble.DB, refs *refCheck) error {
	bounds, err := readBounds(db)
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			v.rep.Findings = append(v.rep.Findings, ce)
			return nil
		}
		return err
	}
	// Dedup refs of the WAL, kept only for the ids the snapshots name.
	want := map[uint64]bool{}
	for _, s := range v.snaps {
		for _, r := range s.refs {
			want[r.id] = true
		}
	}
	walRefs := map[uint64]uint64{}
	refOf := func(id uint64) (uint64, bool) { r, ok := walRefs[id]; return r, ok }

	var t walTx
	var expect uint64 // first id of the next batch; 0 before the first
	res, err := wal.Scan(walOptions(&Config{FS: fs, Dir: dir}, nil, nil), bounds, 0, func(seg wal.Segment, off int64, p []byte) error {
		v.rep.Batches++
		at := loc{file: walDir + "/" + seg.Name(), off: off}
		b, err := openBatch(p) // Scan verified it
		if err == nil {
			err = v.batch(&b, &t, expect, at, want, walRefs, refOf, refs)
		}
		if err != nil {
			return &CorruptError{File: at.file, Offset: off, FirstTx: TxID(b.first), LastTx: TxID(b.last()), Reason: err.Error()}
		}
		expect = b.last() + 1
		return nil
	})
	if err != nil {
		var ce *CorruptError
		if errors.As(walError(err), &ce) {
			v.rep.Findings = append(v.rep.Findings, ce)
			return nil
		}
		return err
	}
	if len(res.Segments) > 0 && v.rep.FirstTx == 0 {
		v.rep.FirstTx = TxID(res.First)
	}
	v.rep.TornTail = tornTail(res.Torn)
	if tt := v.rep.TornTail; tt != nil {
		if c := v.coveredTo(); c > uint64(tt.LastKept) {
			// A snapshot proves it was synced: damage, as Open says.
			v.rep.TornTail = nil
			v.rep.Findings = append(v.rep.Findings, &CorruptError{File: tt.File, Offset: tt.Offset, FirstTx: tt.LastKept + 1, LastTx: TxID(c),
				Reason: fmt.Sprintf("damaged record covered by a snapshot up to tx %d, so not a torn write", c)})
		}
	}
	return nil
}

// batch replays one checksum-valid batch, recording findings for ids and
// balances that do not continue. Its error means the batch is undecodable.
func (v *verifier) batch(b *batchReader, t *walTx, expect uint64, key loc, want map[uint64]bool, walRefs map[uint64]uint64, refOf func(uint64) (uint64, bool), refs *refCheck) error {
	// Decode the whole batch first: an undecodable batch changes nothing.
	c := *b
	for {
		ok, err := c.next(t)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
	}
	switch {
	case expect == 0:
		v.rep.FirstTx = TxID(b.first)
		v.rep.FromZero = b.first == 1
		if v.rep.FromZero {
			v.allAccounts = true
			for a := range v.known {
				v.learn(uint64(a), 0)
			}
		}
		v.last = b.first - 1
		v.reachSnapshots(refOf) // a snapshot just before the WAL anchors it
	case b.first != expect:
		v.finding(key, expect, b.first-1, "WAL batch starts at tx %d, want %d", b.first, expect)
		if b.first > expect {
			v.forget()
			v.allAccounts = false // the gap may have created accounts
			v.anchored = nil
		}
		v.last = b.first - 1
	}
	for {
		ok, _ := b.next(t)
		if !ok {
			break
		}
		v.rep.Transactions++
		if t.kind == KindCreateAccount && t.fail == OK && v.allAccounts && !v.createAccount(t.acct) {
			v.finding(key, t.id, t.id, "account %d created twice, or beyond MaxAccounts", t.acct.id)
		}
		var ledger uint32
		group := 0 // start of the entries of one ledger: each expiry release, then the transaction's own
		for i := 0; i < t.n; i++ {
			if i == group {
				v.addMoved(t, group, ledger)
				ledger, group = 0, i+2
				if i >= t.nexp {
					group = t.n
				}
			}
			e := t.entry(i)
			slot, ok := v.slots[e.Account]
			if !ok {
				if v.allAccounts {
					v.finding(key, t.id, t.id, "entry for account %d, never created", e.Account)
				}
				continue
			}
			if l := v.ledgers[slot]; l != 0 && ledger != 0 && l != ledger {
				v.finding(key, t.id, t.id, "entries in ledgers %d and %d", ledger, l)
			} else if l != 0 {
				ledger = l
			}
			cl := cell(slot, e.Column)
			check := len(v.active) == 0 || v.windowEntry(cl, e)
			if check && v.known[cl] {
				if nv, ok := addInt64(v.bal[cl], e.Delta); !ok || nv != e.Value {
					v.finding(key, t.id, t.id, "account %d %v %d%+d recorded as %d", e.Account, e.Column, v.bal[cl], e.Delta, e.Value)
				}
			}
			v.learn(cl, e.Value)
		}
		v.addMoved(t, group, ledger)
		refs.tx(t, key)
		if want[t.id] {
			ref := t.userRef
			if t.fail == Duplicate {
				ref = 0 // a duplicate never enters the window
			}
			walRefs[t.id] = ref
		}
		v.last = t.id
		v.rep.LastTx = TxID(t.id)
		if len(v.active) > 0 {
			v.closeWindows()
		}
		if v.next < len(v.snaps) && v.snaps[v.next].id <= t.id {
			v.reachSnapshots(refOf)
		}
	}
	return nil
}
