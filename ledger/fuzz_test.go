package ledger

// Fuzz targets for the on-disk decoders. `go test` runs the seed corpus;
// `go test -run '^$' -fuzz '^FuzzWALBatch$' -fuzztime 30s` explores.

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// decodeBatchAll decodes every transaction of a WAL batch value, stopping at
// the first error.
func decodeBatchAll(val []byte) ([]Result, error) {
	b, err := openBatch(val)
	if err != nil {
		return nil, err
	}
	var out []Result
	var t walTx
	for {
		ok, err := b.next(&t)
		if err != nil {
			return out, err
		}
		if !ok {
			return out, nil
		}
		out = append(out, t.result())
	}
}

// decodeBatchRecords decodes every transaction of a WAL batch value into
// its ring record (walTx.record: for re-encoding), stopping at the first
// error.
func decodeBatchRecords(val []byte) ([]txRecord, error) {
	b, err := openBatch(val)
	if err != nil {
		return nil, err
	}
	var out []txRecord
	var t walTx
	for {
		ok, err := b.next(&t)
		if err != nil || !ok {
			return out, err
		}
		out = append(out, t.record())
	}
}

func walSeeds() [][]byte {
	sets := [][]txRecord{
		{{id: 1, ts: 5, kind: KindDeposit, n: 2, inline: [2]cellEntry{{acct: 0, delta: 5, value: 5, col: DebitsPosted}, {acct: 3, delta: 5, value: 5, col: CreditsPosted}}}},
		{
			{id: 7, ts: 1000, kind: KindDeposit, n: 2, userRef: 4, inline: [2]cellEntry{{acct: 0, delta: 5, value: 5, col: DebitsPosted}, {acct: 3, delta: 5, value: 5, col: CreditsPosted}}},
			{id: 8, ts: 1001, kind: KindWithdrawal, fail: ExceedsCredits, userRef: 99},
			{id: 9, ts: 1001, kind: KindTransfer, fail: Duplicate, userRef: 99, orig: 8},
			{id: 10, ts: 1001, kind: KindTransfer, n: 2, ledger: 7, code: 3, userData: 9, tflags: Pending, timeout: 60,
				inline: [2]cellEntry{{acct: 1, delta: 5, value: 5, col: DebitsPending}, {acct: 2, delta: 5, value: 5, col: CreditsPending}}},
			{id: 11, ts: 5000, kind: KindComposite, n: 3, extra: ext([]cellEntry{{acct: 1, delta: 2, value: 2, col: CreditsPosted}, {acct: 2, delta: 3, value: 3, col: DebitsPosted}, {acct: 1, delta: 1, value: 3, col: CreditsPosted}})},
		},
		{{id: 1 << 40, ts: -1, kind: KindTransfer, n: 2, inline: [2]cellEntry{{acct: 1, delta: 1 << 62, value: 1 << 62, col: DebitsPosted}, {acct: 2, delta: 1 << 62, value: 1 << 62, col: CreditsPosted}}}},
		{{id: 3, ts: 9, kind: KindCreateAccount, userRef: 1}, {id: 4, ts: 9, kind: KindCreateAccount, fail: ExistsWithDifferentCode}},
	}
	post := txRecord{id: 20, ts: 9, kind: KindTransfer, ledger: 3, code: 4, userData: 5, tflags: PostPendingTransfer, orig: 11}
	post.setEntries([]cellEntry{{acct: 1, delta: -5, value: 0, col: DebitsPending}, {acct: 2, delta: -5, value: 0, col: CreditsPending},
		{acct: 1, delta: 4, value: 4, col: DebitsPosted}, {acct: 2, delta: 4, value: 4, col: CreditsPosted}})
	post.extra.expired = []uint64{12, 13}
	post.extra.exp = []cellEntry{{acct: 3, delta: -1, value: 0, col: DebitsPending}, {acct: 4, delta: -1, value: 0, col: CreditsPending},
		{acct: 3, delta: -2, value: 1, col: DebitsPending}, {acct: 5, delta: -2, value: 7, col: CreditsPending}}
	failed := txRecord{id: 21, ts: 9, kind: KindDeposit, fail: AccountNotFound, extra: &recExtra{expired: []uint64{14},
		exp: []cellEntry{{acct: 3, delta: -1, value: 0, col: DebitsPending}, {acct: 4, delta: -1, value: 0, col: CreditsPending}}}}
	sets = append(sets, []txRecord{post, failed})
	sets[3][0].setAccount(acctMeta{id: 77, userData: [2]uint64{1, 2}, ledger: 700, code: 9, flags: DebitsMustNotExceedCredits})
	sets[3][1].setAccount(acctMeta{id: 77, ledger: 700, code: 8})
	var seeds [][]byte
	for _, s := range sets {
		v, _ := encodeBatch(nil, s, walMaxBytes)
		seeds = append(seeds, v, v[:len(v)-1], v[:batchHeaderLen])
	}
	return append(seeds, nil, []byte("W"), make([]byte, 64))
}

// FuzzWALBatch: arbitrary bytes never panic; the decoder allocates nothing
// (a result allocates only its entries, bounded by the input length); and
// whatever decodes re-encodes to values that decode to the same results.
func FuzzWALBatch(f *testing.F) {
	for _, s := range walSeeds() {
		f.Add(s)
		if len(s) > 4 {
			f.Add(sealRecord(s[4:])) // valid checksum over the bytes as they are
		}
	}
	f.Fuzz(func(t *testing.T, val []byte) {
		if len(val) > 4 && val[0]&1 == 1 {
			val = sealRecord(val[4:]) // reach past the checksum half the time
		}
		got, err := decodeBatchAll(val)
		if err != nil {
			return
		}
		total := 0
		for _, r := range got {
			total += len(r.Entries)
		}
		require.LessOrEqual(t, total*entryLen, len(val))
		recs, err := decodeBatchRecords(val)
		require.NoError(t, err)
		var again []Result
		for rest := recs; len(rest) > 0; {
			v, n := encodeBatch(nil, rest, walMaxBytes)
			require.Positive(t, n)
			part, err := decodeBatchAll(v)
			require.NoError(t, err)
			again = append(again, part...)
			rest = rest[n:]
		}
		require.Equal(t, got, again)
	})
}

// FuzzSnapshot: the cell chunk, account record, dedup window and manifest decoders never
// panic on arbitrary bytes, allocate at most in proportion to the input, and
// re-encoding what they accept reproduces the same bytes (chunks) or the
// same value (the msgpack manifest).
func FuzzSnapshot(f *testing.F) {
	f.Add(encodeCellChunk(nil, 0, []int64{9, 0, 1 << 62}))
	f.Add(encodeCellChunk(nil, 2, []int64{1, 0}))
	f.Add(encodeAccountRecord(acctMeta{id: 7, ledger: 1, code: 2, flags: History, userData: [2]uint64{3, 4}}))
	f.Add(encodeRefsChunk([]refEntry{{1, 5}, {9, 7}}))
	f.Add(encodeRefsChunk(nil))
	book := newPendingBook(fateRetention{})
	book.add(pendingXfer{id: 5, debit: 9, credit: 10, dslot: 1, cslot: 2, amount: 7, expires: 99, userData: 3, ledger: 1, code: 2, flags: Pending | ClosingDebit})
	book.add(pendingXfer{id: 6, debit: 9, credit: 10, dslot: 1, cslot: 2, amount: 8, flags: Pending})
	book.resolve(6, pendingPosted, 50, 7)
	f.Add(book.encode())
	man, err := encodeMsgpack(manifest{FormatVersion: 1, TxID: 9, MaxAccounts: 8, ChunkAccounts: snapChunkAccounts, Chunks: 1, DedupWindow: 4, Refs: 2, CreatedUnixNs: 3})
	require.NoError(f, err)
	f.Add(man)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, val []byte) {
		if len(val) > 4 && val[0]&1 == 1 {
			val = sealRecord(val[4:])
		}
		var first uint64
		if len(val) >= 12 {
			first = uint64(val[4]) // often the header's own first account
		}
		var n uint64
		if len(val) >= 16 {
			n = uint64(binary.LittleEndian.Uint32(val[12:]))
		}
		if cells, err := decodeCellChunk(val, first, n, nil); err == nil {
			require.LessOrEqual(t, len(cells), len(val))
			if enc := encodeCellChunk(nil, first, cells); !bytes.Equal(val, enc) {
				// Uvarints have non-minimal spellings; the values are what must agree.
				again, err := decodeCellChunk(enc, first, n, nil)
				require.NoError(t, err)
				require.Equal(t, cells, again)
			}
		}
		if m, err := decodeAccountRecord(val); err == nil {
			require.Equal(t, val, encodeAccountRecord(m))
		}
		if refs, err := decodeRefsChunk(val); err == nil {
			require.LessOrEqual(t, 16*len(refs), len(val))
			require.True(t, bytes.Equal(val, encodeRefsChunk(refs)))
		}
		if b, err := decodePendingBook(val, fateRetention{}, 1<<20, 1<<40); err == nil {
			// Open pending transfers sort by id; the rest keeps its order.
			again, err := decodePendingBook(b.encode(), fateRetention{}, 1<<20, 1<<40)
			require.NoError(t, err)
			require.Equal(t, b.encode(), again.encode())
			require.LessOrEqual(t, len(b.m)*openRecLen+len(b.done)*fateRecLen+len(b.closed)*16, len(val))
		}
		if m, err := decodeManifest(val); err == nil {
			enc, err := encodeMsgpack(m)
			require.NoError(t, err)
			m2, err := decodeManifest(enc)
			require.NoError(t, err)
			require.Equal(t, m, m2)
		}
	})
}

// The WAL decoder allocates nothing, whatever it is given.
func TestBatchDecodeAllocatesNothing(t *testing.T) {
	val := walSeeds()[3]
	var tx walTx
	allocs := testing.AllocsPerRun(100, func() {
		b, err := openBatch(val)
		if err != nil {
			panic(err)
		}
		for {
			ok, err := b.next(&tx)
			if err != nil {
				panic(err)
			}
			if !ok {
				return
			}
		}
	})
	require.Zero(t, allocs)
}
