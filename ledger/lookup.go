package ledger

import (
	"context"
	"fmt"

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
	it, err := l.ixdb.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixBlock}, UpperBound: idKey(prefixBlock, uint64(info.AsOf)+1)})
	if err != nil {
		return nil, info, err
	}
	defer it.Close()
	out := make([]*Result, len(ids))
	var b block
	var t walTx
	for i, id := range ids {
		if id == 0 || id > info.AsOf {
			continue
		}
		if b.count == 0 || uint64(id) < b.first || uint64(id) > b.last() {
			if !it.SeekLT(idKey(prefixBlock, uint64(id)+1)) {
				if err := it.Error(); err != nil {
					return nil, info, err
				}
				continue
			}
			if err := b.decode(it.Key(), it.Value()); err != nil {
				return nil, info, err
			}
			if uint64(id) > b.last() {
				b.count = 0 // not kept: a later id of it seeks again
				continue
			}
			if err := b.load(l.kept); err != nil {
				return nil, info, err
			}
			// A copy's bytes stay valid only until the iterator moves.
			b.batch, b.offs, b.posts = clone(b.batch), clone(b.offs), nil
		}
		if err := b.tx(uint64(id), &t); err != nil {
			return nil, info, &CorruptError{Key: idKey(prefixBlock, b.first), Reason: fmt.Sprintf("index block, tx %d: %v", id, err)}
		}
		r := t.result()
		out[i] = &r
	}
	return out, info, nil
}
