package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// readTries is how often readBalances tries to read between two of the
// Snapshotter's batches before it settles for a read that straddles one.
const readTries = 4

// readBalances runs read, which loads readable balances, and fills
// info.AsOf with a transaction every load reflects and returns the last
// one a load may reflect (info.Through). The Snapshotter stores applying
// (a batch's last id) before the batch's balances and Snapshot after, so
// a read that loads Snapshot = x before and applying = x after saw no
// store of a later batch: it is exactly as of x.
func (l *Ledger) readBalances(read func(), info *ReadInfo) TxID {
	for try := 1; ; try++ {
		x := l.snapshot.Load()
		read()
		a := l.applying.Load()
		if a == x || try == readTries {
			info.AsOf = TxID(x)
			return TxID(a)
		}
	}
}

// account is slot s's account with its readable columns.
func (l *Ledger) account(s uint64) Account {
	a := l.accts.meta[s].public()
	if l.closedBits.get(s) {
		a.Flags |= Closed // by a closing transfer
	}
	c := l.readable[cell(s, 0):cell(s, numColumns)]
	a.DebitsPosted, a.CreditsPosted = uint64(c[DebitsPosted].Load()), uint64(c[CreditsPosted].Load())
	a.DebitsPending, a.CreditsPending = uint64(c[DebitsPending].Load()), uint64(c[CreditsPending].Load())
	return a
}

// LookupAccounts returns the accounts ids name, in order, nil for one that
// does not exist (or whose creation is not applied yet): up to
// MaxReadLimit ids. The columns are the readable balances; ReadInfo says
// which transactions they reflect (exactly AsOf when Through equals it).
func (l *Ledger) LookupAccounts(ids []uint64) ([]*Account, ReadInfo, error) {
	if len(ids) == 0 || len(ids) > MaxReadLimit {
		return nil, ReadInfo{}, filterErr("ids", "%d ids, want 1 to %d", len(ids), MaxReadLimit)
	}
	if err := l.refused(l.state.Load()); err != nil {
		return nil, ReadInfo{}, err
	}
	info := ReadInfo{Committed: TxID(l.committed.Load())}
	out := make([]*Account, len(ids))
	accts := make([]Account, len(ids))
	info.Through = l.readBalances(func() {
		visible := l.visible.Load()
		for i, id := range ids {
			out[i] = nil
			if s, ok := l.accts.slot(id); ok && s < visible {
				accts[i] = l.account(s)
				out[i] = &accts[i]
			}
		}
	}, &info)
	return out, info, nil
}

// LookupTransfers returns the transactions ids name, in order, from the
// index: any kind and outcome, failed ones included; nil for an id the
// index does not hold as of ReadInfo.AsOf (never sequenced, not yet
// indexed, or before the index began). Up to MaxReadLimit ids; waitFor as
// in AccountFilter.
func (l *Ledger) LookupTransfers(ctx context.Context, ids []TxID, waitFor TxID) ([]*Result, ReadInfo, error) {
	if len(ids) == 0 || len(ids) > MaxReadLimit {
		return nil, ReadInfo{}, filterErr("ids", "%d ids, want 1 to %d", len(ids), MaxReadLimit)
	}
	info, err := l.indexRead(ctx, waitFor)
	if err != nil {
		return nil, info, err
	}
	defer l.exit()
	// The blocks of all ids first, in id order (the seeks go forward; ids
	// of one block share it), copies decoded at once; then the reference
	// blocks' spans, several reads at a time (loadBlocks).
	order := make([]int, 0, len(ids))
	for i, id := range ids {
		if id != 0 && id <= info.AsOf {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(ids[a], ids[b]) })
	out := make([]*Result, len(ids))
	decode := func(b *block, of []int) error {
		var t walTx
		for _, i := range of {
			if err := b.tx(uint64(ids[i]), &t); err != nil {
				return &CorruptError{Key: idKey(prefixBlock, b.first), Reason: fmt.Sprintf("index block, tx %d: %v", ids[i], err)}
			}
			r := t.result()
			out[i] = &r
		}
		return nil
	}
	var refs []block
	var refIDs [][]int // refs[k]'s ids, a run of order
	it, err := l.ixdb.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixBlock}, UpperBound: idKey(prefixBlock, uint64(info.AsOf)+1)})
	if err != nil {
		return nil, info, err
	}
	for p := 0; p < len(order); {
		if !it.SeekLT(idKey(prefixBlock, uint64(ids[order[p]])+1)) {
			if err = it.Error(); err != nil {
				break
			}
			p++
			continue
		}
		var b block
		if err = b.decode(it.Key(), it.Value()); err != nil {
			break
		}
		q := p
		for q < len(order) && uint64(ids[order[q]]) <= b.last() {
			q++
		}
		switch {
		case q == p: // not held: past its block's end
			q++
		case b.isRef:
			b.posts = nil // aliases the iterator's value
			refs, refIDs = append(refs, b), append(refIDs, order[p:q])
		default:
			err = decode(&b, order[p:q]) // a copy is valid only until the iterator moves
		}
		if err != nil {
			break
		}
		p = q
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = loadBlocks(ctx, l.kept, refs, func(k int, b *block) error { return decode(b, refIDs[k]) })
	}
	if err != nil {
		return nil, info, err
	}
	return out, info, nil
}
