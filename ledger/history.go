package ledger

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// AccountFilter selects transfers of one account (AccountTransfers,
// AccountBalances).
type AccountFilter struct {
	// Debits and Credits select the transfers that debit and that credit
	// the account; at least one must be set.
	Debits, Credits bool
	// MinTimestamp and MaxTimestamp bound the transfers' timestamps (Unix
	// ns, inclusive); 0 leaves that end open.
	MinTimestamp, MaxTimestamp int64
	// Code and UserData select transfers (KindTransfer) with these
	// fields; 0: any.
	Code     uint16
	UserData uint64
	// Limit is the most transfers returned, 1 to MaxReadLimit.
	Limit int
	// Reverse returns the newest first.
	Reverse bool
	// Cursor continues the page that returned it (same account and filter).
	Cursor Cursor
	// WaitFor, if not 0, waits until the index holds this transaction
	// (the id of one's own write: read-your-writes).
	WaitFor TxID
}

// AccountTransfer is a transfer of an account's history with the
// account's columns after it.
type AccountTransfer struct {
	Result
	Balance AccountBalance
}

// AccountBalance is an account's four columns after transaction TxID
// (at Timestamp).
type AccountBalance struct {
	TxID                                                       TxID
	Timestamp                                                  int64
	DebitsPosted, CreditsPosted, DebitsPending, CreditsPending uint64
}

// AccountTransfersPage is a page of AccountTransfers.
type AccountTransfersPage struct {
	ReadInfo
	Transfers []AccountTransfer
	// Next continues after the last transfer returned; empty when the page
	// was not full (a full page may be followed by an empty one).
	Next Cursor
}

// AccountBalancesPage is a page of AccountBalances.
type AccountBalancesPage struct {
	ReadInfo
	Balances []AccountBalance
	Next     Cursor
}

func (f *AccountFilter) hash(kind byte, account uint64) filterHash {
	h := newFilterHash(kind)
	h.add(account, b2u(f.Debits), b2u(f.Credits), uint64(f.MinTimestamp), uint64(f.MaxTimestamp), uint64(f.Code), f.UserData, b2u(f.Reverse))
	return h
}

// fields reports whether t has the filter's code and user data.
func (f *AccountFilter) fields(t *walTx) bool {
	if f.Code == 0 && f.UserData == 0 {
		return true
	}
	if t.kind != KindTransfer || t.fail == Duplicate {
		return false
	}
	return (f.Code == 0 || t.xfer.code == f.Code) && (f.UserData == 0 || t.xfer.userData == f.UserData)
}

func (f *AccountFilter) check() error {
	if !f.Debits && !f.Credits {
		return filterErr("debits", "neither debits nor credits selected")
	}
	return checkPage(f.Limit, f.MinTimestamp, f.MaxTimestamp)
}

// AccountTransfers returns the transfers of account, which must have been
// created with the History flag, in transaction order (newest first with
// Reverse), each with the account's columns after it: TigerBeetle's
// get_account_transfers. It reads the index as of the Snapshot index
// (ReadInfo); see AccountFilter.WaitFor to read one's own write.
func (l *Ledger) AccountTransfers(ctx context.Context, account uint64, f AccountFilter) (AccountTransfersPage, error) {
	var p AccountTransfersPage
	info, err := l.historyScan(ctx, account, &f, readAccountTransfers, func(h *histRecord, t *walTx) {
		at := AccountTransfer{Result: t.result(), Balance: h.balance(t.ts)}
		p.Transfers = append(p.Transfers, at)
	})
	p.ReadInfo, p.Next = info.ReadInfo, info.next
	return p, err
}

// AccountBalances returns account's columns after each of its transfers
// the filter selects (History accounts only): TigerBeetle's
// get_account_balances.
func (l *Ledger) AccountBalances(ctx context.Context, account uint64, f AccountFilter) (AccountBalancesPage, error) {
	var p AccountBalancesPage
	info, err := l.historyScan(ctx, account, &f, readAccountBalances, func(h *histRecord, t *walTx) {
		p.Balances = append(p.Balances, h.balance(t.ts))
	})
	p.ReadInfo, p.Next = info.ReadInfo, info.next
	return p, err
}

func (h *histRecord) balance(ts int64) AccountBalance {
	return AccountBalance{TxID: TxID(h.tx), Timestamp: ts,
		DebitsPosted: uint64(h.cols[DebitsPosted]), CreditsPosted: uint64(h.cols[CreditsPosted]),
		DebitsPending: uint64(h.cols[DebitsPending]), CreditsPending: uint64(h.cols[CreditsPending])}
}

type scanInfo struct {
	ReadInfo
	next Cursor
}

// historyAccount checks that account exists (as of the read) and keeps
// history.
func (l *Ledger) historyAccount(account uint64) error {
	s, ok := l.accts.slot(account)
	if !ok || s >= l.visible.Load() {
		return fmt.Errorf("account %d: %w", account, ErrAccountNotFound)
	}
	if l.accts.meta[s].flags&History == 0 {
		return fmt.Errorf("account %d: %w", account, ErrNoHistory)
	}
	return nil
}

// historyScan walks account's history records that f selects, calling fn
// for each, up to f.Limit.
func (l *Ledger) historyScan(ctx context.Context, account uint64, f *AccountFilter, kind byte, fn func(*histRecord, *walTx)) (scanInfo, error) {
	if err := f.check(); err != nil {
		return scanInfo{}, err
	}
	fh := f.hash(kind, account)
	pos, err := parseCursor(f.Cursor, kind, fh)
	if err != nil {
		return scanInfo{}, err
	}
	info, err := l.indexRead(ctx, f.WaitFor)
	if err != nil {
		return scanInfo{}, err
	}
	defer l.exit()
	if err := l.historyAccount(account); err != nil {
		return scanInfo{ReadInfo: info}, err
	}
	lo, hi, err := l.txRange(uint64(info.AsOf), f.MinTimestamp, f.MaxTimestamp)
	if err != nil {
		return scanInfo{ReadInfo: info}, err
	}
	lo, hi = afterCursor(lo, hi, pos, f.Reverse)
	out := scanInfo{ReadInfo: info}
	if lo > hi {
		return out, nil
	}
	var kb [17]byte
	it, err := l.ixdb.NewIter(&pebble.IterOptions{
		LowerBound: historyKey(nil, account, lo),
		UpperBound: historyKey(kb[:0], account, hi+1),
	})
	if err != nil {
		return out, err
	}
	defer it.Close()
	n := 0
	var t walTx
	var last uint64
	step := it.Next
	ok := it.First()
	if f.Reverse {
		step, ok = it.Prev, it.Last()
	}
	for ; ok && n < f.Limit; ok = step() {
		h, err := decodeHistory(it.Key(), it.Value())
		if err != nil {
			return out, &CorruptError{Key: clone(it.Key()), Reason: "history record: " + err.Error()}
		}
		if h.kind != histTransfer || (h.side&sideDebit == 0 || !f.Debits) && (h.side&sideCredit == 0 || !f.Credits) {
			continue
		}
		if err := h.transfer(&t); err != nil {
			return out, &CorruptError{Key: clone(it.Key()), Reason: "history record: " + err.Error()}
		}
		if !inTime(t.ts, f.MinTimestamp, f.MaxTimestamp) || !f.fields(&t) {
			continue
		}
		fn(&h, &t)
		last = h.tx
		n++
	}
	if err := it.Error(); err != nil {
		return out, err
	}
	if n == f.Limit {
		out.next = makeCursor(kind, fh, last)
	}
	return out, nil
}

// BalanceAt returns account's columns after transaction at: after the last
// of its transfers at or before at (TxID names it; 0 with zero columns if it
// had none the index holds). The account must have the History flag. It
// waits until the index holds at; at must be committed (else
// ErrNotCommitted).
func (l *Ledger) BalanceAt(ctx context.Context, account uint64, at TxID) (AccountBalance, ReadInfo, error) {
	if at == 0 {
		return AccountBalance{}, ReadInfo{}, filterErr("tx", "0 is no transaction")
	}
	if c := TxID(l.committed.Load()); at > c {
		return AccountBalance{}, ReadInfo{}, fmt.Errorf("tx %d: %w", at, ErrNotCommitted)
	}
	info, err := l.indexRead(ctx, at)
	if err != nil {
		return AccountBalance{}, info, err
	}
	defer l.exit()
	if err := l.historyAccount(account); err != nil {
		return AccountBalance{}, info, err
	}
	it, err := l.ixdb.NewIter(&pebble.IterOptions{LowerBound: historyKey(nil, account, 0), UpperBound: historyKey(nil, account, uint64(at)+1)})
	if err != nil {
		return AccountBalance{}, info, err
	}
	defer it.Close()
	if !it.Last() {
		return AccountBalance{}, info, it.Error()
	}
	h, err := decodeHistory(it.Key(), it.Value())
	if err != nil {
		return AccountBalance{}, info, &CorruptError{Key: clone(it.Key()), Reason: "history record: " + err.Error()}
	}
	var ts int64
	if h.kind == histTransfer {
		var t walTx
		if err := h.transfer(&t); err != nil {
			return AccountBalance{}, info, &CorruptError{Key: clone(it.Key()), Reason: "history record: " + err.Error()}
		}
		ts = t.ts
	}
	return h.balance(ts), info, nil
}

// txRange returns the transactions [lo, hi] whose timestamps may lie in
// [minTs, maxTs] (0: open), up to asOf, from the blocks' time keys: every
// block before lo ends before minTs, every one after hi starts after
// maxTs. It assumes timestamps do not decrease from one transaction to the
// next (the Transactor's clock is monotonic; across restarts it is the
// wall clock): callers still check each transaction's.
func (l *Ledger) txRange(asOf uint64, minTs, maxTs int64) (lo, hi uint64, err error) {
	lo, hi = 1, asOf
	if minTs == 0 && maxTs == 0 {
		return lo, hi, nil
	}
	it, err := prefixIter(l.ixdb, prefixBlockTime)
	if err != nil {
		return 0, 0, err
	}
	defer it.Close()
	var k [17]byte
	timeKey := func(ts int64) []byte {
		b := append(k[:0], prefixBlockTime)
		return appendU64BE(b, tsKey(ts))
	}
	first := func() uint64 { return beU64(it.Key()[9:]) }
	if minTs != 0 {
		if !it.SeekGE(timeKey(minTs)) {
			return 1, 0, it.Error() // every block ends before minTs
		}
		lo = first()
	}
	if maxTs != 0 && maxTs < 1<<63-1 && it.SeekGE(timeKey(maxTs+1)) {
		// This block ends after maxTs but may start before it; the next
		// starts after it.
		if it.Next() {
			hi = min(hi, first()-1)
		}
	}
	return lo, hi, it.Error()
}
