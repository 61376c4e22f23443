package ledger

import (
	"bytes"
	"context"
	"encoding/binary"

	"github.com/cockroachdb/pebble/v2"
)

// TransferFilter selects transfers ledger-wide (QueryTransfers): the
// transactions that moved money (applied, any kind but create_account).
// Zero fields match anything.
type TransferFilter struct {
	// Ledger is the transfers' ledger (their accounts'); 0: any.
	Ledger uint32
	// Code and UserData are a Transfer's fields (other kinds have none:
	// they match only 0); 0: any.
	Code     uint16
	UserData uint64
	// MinTimestamp and MaxTimestamp bound the timestamps (Unix ns,
	// inclusive); 0 leaves that end open.
	MinTimestamp, MaxTimestamp int64
	Limit                      int // 1 to MaxReadLimit
	Reverse                    bool
	Cursor                     Cursor
	WaitFor                    TxID
}

// AccountQuery selects accounts (QueryAccounts). Zero fields match
// anything.
type AccountQuery struct {
	Ledger   uint32
	Code     uint16
	UserData [2]uint64
	// MinTimestamp and MaxTimestamp bound the creation timestamps.
	// Accounts created before the index began (see IndexStats) have
	// timestamp 0 and match only an open lower bound.
	MinTimestamp, MaxTimestamp int64
	Limit                      int
	Reverse                    bool
	Cursor                     Cursor
	WaitFor                    TxID
}

// TransfersPage is a page of QueryTransfers: the transactions' results.
type TransfersPage struct {
	ReadInfo
	Transfers []Result
	Next      Cursor
}

// AccountsPage is a page of QueryAccounts, in creation order.
type AccountsPage struct {
	ReadInfo
	Accounts []Account
	Next     Cursor
}

func (f *TransferFilter) hash() filterHash {
	h := newFilterHash(readQueryTransfers)
	h.add(uint64(f.Ledger), uint64(f.Code), f.UserData, uint64(f.MinTimestamp), uint64(f.MaxTimestamp), b2u(f.Reverse))
	return h
}

func (q *AccountQuery) hash() filterHash {
	h := newFilterHash(readQueryAccounts)
	h.add(uint64(q.Ledger), uint64(q.Code), q.UserData[0], q.UserData[1], uint64(q.MinTimestamp), uint64(q.MaxTimestamp), b2u(q.Reverse))
	return h
}

// QueryTransfers returns the transfers the filter selects, in transaction
// order (newest first with Reverse), as of the index (ReadInfo): TigerBeetle's
// query_transfers. With an equality field it walks that field's postings,
// one key per block of transactions; without, the blocks themselves.
func (l *Ledger) QueryTransfers(ctx context.Context, f TransferFilter) (TransfersPage, error) {
	var p TransfersPage
	if err := checkPage(f.Limit, f.MinTimestamp, f.MaxTimestamp); err != nil {
		return p, err
	}
	fh := f.hash()
	pos, err := parseCursor(f.Cursor, readQueryTransfers, fh)
	if err != nil {
		return p, err
	}
	if p.ReadInfo, err = l.indexRead(ctx, f.WaitFor); err != nil {
		return p, err
	}
	defer l.exit()
	lo, hi, err := l.txRange(uint64(p.AsOf), f.MinTimestamp, f.MaxTimestamp)
	if err != nil {
		return p, err
	}
	lo, hi = afterCursor(lo, hi, pos, f.Reverse)
	if lo > hi {
		return p, nil
	}
	var ud *[16]byte
	if f.UserData != 0 {
		v := u64Value(f.UserData)
		ud = &v
	}
	posts := fieldPostings(prefixTxPosting, f.Ledger, f.Code, ud)
	var t walTx
	var last uint64
	err = l.scanTransfers(posts, lo, hi, f.Reverse, func(b *block, id uint64) (bool, error) {
		if err := b.tx(id, &t); err != nil {
			return false, err
		}
		if t.fail != OK || t.kind == KindCreateAccount || !inTime(t.ts, f.MinTimestamp, f.MaxTimestamp) {
			return true, nil
		}
		p.Transfers = append(p.Transfers, t.result())
		last = id
		return len(p.Transfers) < f.Limit, nil
	})
	if err == nil && len(p.Transfers) == f.Limit {
		p.Next = makeCursor(readQueryTransfers, fh, last)
	}
	return p, err
}

// scanTransfers calls fn for the transactions lo..hi (in order, or reverse)
// that are in every posting list (every one, with none), with the block
// holding each, until fn returns false.
func (l *Ledger) scanTransfers(posts []postingList, lo, hi uint64, reverse bool, fn func(b *block, id uint64) (bool, error)) error {
	bit, err := l.ixdb.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixBlock}, UpperBound: idKey(prefixBlock, hi+1)})
	if err != nil {
		return err
	}
	defer bit.Close()
	// The block holding lo starts at or before it.
	start := lo
	if bit.SeekLT(idKey(prefixBlock, lo+1)) {
		start = beU64(bit.Key()[1:])
	}
	if err := bit.Error(); err != nil {
		return err
	}
	var b block
	visit := func(k, v []byte, bits *[blockMax / 64]uint64) (bool, error) {
		if err := b.decode(k, v); err != nil {
			return false, err
		}
		for j := range b.count {
			if reverse {
				j = b.count - 1 - j
			}
			id := b.first + uint64(j)
			if id < lo || id > hi || bits != nil && bits[j/64]&(1<<(j%64)) == 0 {
				continue
			}
			if err := b.load(l.kept); err != nil { // once, for the first transaction it visits
				return false, err
			}
			more, err := fn(&b, id)
			if err != nil {
				return false, &CorruptError{Key: clone(k), Reason: "index block: " + err.Error()}
			}
			if !more {
				return false, nil
			}
		}
		return true, nil
	}
	if len(posts) == 0 {
		ok := bit.SeekGE(idKey(prefixBlock, start))
		step := bit.Next
		if reverse {
			ok, step = bit.Last(), bit.Prev
		}
		for ; ok; ok = step() {
			if beU64(bit.Key()[1:]) < start {
				break
			}
			more, err := visit(bit.Key(), bit.Value(), nil)
			if err != nil || !more {
				return err
			}
		}
		return bit.Error()
	}
	for i := range posts {
		if err := posts[i].open(l.ixdb, start, hi); err != nil {
			return err
		}
		defer posts[i].close()
	}
	id := start
	if reverse {
		id = hi
	}
	for {
		blk, ok, err := zigzag(posts, id, reverse)
		if err != nil || !ok {
			return err
		}
		var bits [blockMax / 64]uint64
		for i := range bits {
			bits[i] = ^uint64(0)
		}
		for i := range posts {
			pb, err := posts[i].bitmap()
			if err != nil {
				return err
			}
			for w := range bits {
				bits[w] &= pb[w]
			}
		}
		if !bit.SeekGE(idKey(prefixBlock, blk)) || beU64(bit.Key()[1:]) != blk {
			if err := bit.Error(); err != nil {
				return err
			}
			return &CorruptError{Key: idKey(prefixBlock, blk), Reason: "index posting names a missing block"}
		}
		more, err := visit(bit.Key(), bit.Value(), &bits)
		if err != nil || !more {
			return err
		}
		if reverse {
			if blk == 0 {
				return nil
			}
			id = blk - 1
		} else {
			id = blk + 1
		}
	}
}

// postingList is one field value's postings: keys prefix + id (block first
// tx for transfers, slot for accounts).
type postingList struct {
	prefix []byte
	it     *pebble.Iterator
	lo, hi uint64
}

func postingPrefix(p, field byte, value [16]byte) []byte {
	return append([]byte{p, field}, value[:]...)
}

func (p *postingList) open(db *pebble.DB, lo, hi uint64) error {
	var err error
	p.lo, p.hi = lo, hi
	p.it, err = db.NewIter(&pebble.IterOptions{
		LowerBound: binary.BigEndian.AppendUint64(bytes.Clone(p.prefix), lo),
		UpperBound: binary.BigEndian.AppendUint64(bytes.Clone(p.prefix), hi+1),
	})
	return err
}

func (p *postingList) close() {
	if p.it != nil {
		p.it.Close()
	}
}

// seek positions p at its first id >= id (reverse: last <= id).
func (p *postingList) seek(id uint64, reverse bool) (uint64, bool, error) {
	var ok bool
	if reverse {
		ok = p.it.SeekLT(binary.BigEndian.AppendUint64(bytes.Clone(p.prefix), id+1))
	} else {
		ok = p.it.SeekGE(binary.BigEndian.AppendUint64(bytes.Clone(p.prefix), id))
	}
	if !ok {
		return 0, false, p.it.Error()
	}
	return beU64(p.it.Key()[len(p.prefix):]), true, nil
}

func (p *postingList) bitmap() ([blockMax / 64]uint64, error) {
	var bits [blockMax / 64]uint64
	body, err := openRecord(p.it.Value())
	if err == nil && len(body) != len(bits)*8 {
		err = errBatch
	}
	if err != nil {
		return bits, &CorruptError{Key: clone(p.it.Key()), Reason: "index posting: " + err.Error()}
	}
	for i := range bits {
		bits[i] = binary.LittleEndian.Uint64(body[i*8:])
	}
	return bits, nil
}

// zigzag returns the first id from id on (reverse: the last at or before
// it) that every list holds, leaving each list positioned at it.
func zigzag(posts []postingList, id uint64, reverse bool) (uint64, bool, error) {
	for {
		agree := true
		for i := range posts {
			got, ok, err := posts[i].seek(id, reverse)
			if err != nil || !ok {
				return 0, false, err
			}
			if got != id {
				// The lists before i are sought to the new id next round.
				agree = agree && i == 0
				id = got
			}
		}
		if agree {
			return id, true, nil
		}
	}
}

// QueryAccounts returns the accounts the query selects, in creation order
// (newest first with Reverse): TigerBeetle's query_accounts. The set is as
// of the index (ReadInfo.AsOf); the columns are the readable balances, as
// LookupAccounts reads them (ReadInfo.Through).
func (l *Ledger) QueryAccounts(ctx context.Context, q AccountQuery) (AccountsPage, error) {
	var p AccountsPage
	if err := checkPage(q.Limit, q.MinTimestamp, q.MaxTimestamp); err != nil {
		return p, err
	}
	fh := q.hash()
	pos, err := parseCursor(q.Cursor, readQueryAccounts, fh)
	if err != nil {
		return p, err
	}
	if p.ReadInfo, err = l.indexRead(ctx, q.WaitFor); err != nil {
		return p, err
	}
	defer l.exit()
	lo, hi := uint64(1), l.visible.Load()-1
	lo, hi = afterCursor(lo, hi, pos, q.Reverse)
	if lo > hi {
		return p, nil
	}
	var ud *[16]byte
	if q.UserData != [2]uint64{} {
		v := userDataValue(q.UserData)
		ud = &v
	}
	posts := fieldPostings(prefixAcctPosting, q.Ledger, q.Code, ud)
	if len(posts) == 0 {
		posts = append(posts, postingList{prefix: postingPrefix(prefixAcctPosting, fieldAll, [16]byte{})})
	}
	for i := range posts {
		if err := posts[i].open(l.ixdb, lo, hi); err != nil {
			return p, err
		}
		defer posts[i].close()
	}
	var slots []uint64
	id := lo
	if q.Reverse {
		id = hi
	}
	for len(slots) < q.Limit {
		s, ok, err := zigzag(posts, id, q.Reverse)
		if err != nil {
			return p, err
		}
		if !ok || s < lo || s > hi {
			break
		}
		body, err := openRecord(posts[0].it.Value())
		if err == nil && len(body) != 16 {
			err = errBatch
		}
		if err != nil {
			return p, &CorruptError{Key: clone(posts[0].it.Key()), Reason: "account posting: " + err.Error()}
		}
		tx, ts := binary.LittleEndian.Uint64(body), int64(binary.LittleEndian.Uint64(body[8:]))
		if tx <= uint64(p.AsOf) && inTime(ts, q.MinTimestamp, q.MaxTimestamp) {
			slots = append(slots, s)
		}
		if q.Reverse {
			if s == lo {
				break
			}
			id = s - 1
		} else {
			id = s + 1
		}
	}
	p.Accounts = make([]Account, len(slots))
	set := p.AsOf // the accounts are those created up to it
	p.ReadInfo.Through = l.readBalances(func() {
		for i, s := range slots {
			p.Accounts[i] = l.account(s)
		}
	}, &p.ReadInfo)
	// The columns reflect at least the readable balances' mark; the set,
	// the index's (Through is past both).
	p.AsOf = min(p.AsOf, set)
	p.Through = max(p.Through, set)
	if len(slots) == q.Limit {
		p.Next = makeCursor(readQueryAccounts, fh, slots[len(slots)-1])
	}
	return p, nil
}

// afterCursor narrows lo..hi to the ids after pos in the read's direction
// (pos 0: no cursor).
func afterCursor(lo, hi, pos uint64, reverse bool) (uint64, uint64) {
	switch {
	case pos == 0:
	case reverse:
		hi = min(hi, pos-1)
	default:
		lo = max(lo, pos+1)
	}
	return lo, hi
}

// fieldPostings returns the posting lists under prefix of the fields a
// filter sets: ledger and code when non-zero, user data when not nil.
func fieldPostings(prefix byte, ledger uint32, code uint16, userData *[16]byte) []postingList {
	var posts []postingList
	if ledger != 0 {
		posts = append(posts, postingList{prefix: postingPrefix(prefix, fieldLedger, u32Value(ledger))})
	}
	if code != 0 {
		posts = append(posts, postingList{prefix: postingPrefix(prefix, fieldCode, u16Value(code))})
	}
	if userData != nil {
		posts = append(posts, postingList{prefix: postingPrefix(prefix, fieldUserData, *userData)})
	}
	return posts
}
