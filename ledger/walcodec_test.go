package ledger

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBatchRoundTrip(t *testing.T) {
	recs := []txRecord{
		{id: 7, ts: 1000, kind: KindDeposit, n: 2, inline: [2]Entry{{0, -5, -5}, {3, 5, 5}}},
		{id: 8, ts: 1001, kind: KindWithdrawal, fail: InsufficientFunds, userRef: 99},
		{id: 9, ts: 1001, kind: KindTransfer, fail: Duplicate, userRef: 99, dupOf: 8},
		{id: 10, ts: 5000, kind: KindComposite, n: 3, extra: []Entry{{1, 2, 2}, {2, -3, -3}, {1, 1, 3}}},
	}
	val, n := encodeBatch(nil, recs, walMaxBytes)
	require.Equal(t, len(recs), n)
	b, err := openBatch(val)
	require.NoError(t, err)
	require.Equal(t, uint64(7), b.first)
	require.Equal(t, uint64(10), b.last())
	var tx walTx
	for i := range recs {
		ok, err := b.next(&tx)
		require.NoError(t, err)
		require.True(t, ok)
		want := recs[i].result()
		if len(want.Entries) == 0 {
			want.Entries = nil
		}
		require.Equal(t, want, tx.result())
	}
	ok, err := b.next(&tx)
	require.NoError(t, err)
	require.False(t, ok)
}

func TestBatchSplitsOnTimestampGap(t *testing.T) {
	recs := []txRecord{{id: 1, ts: 0, kind: KindWithdrawal, fail: InsufficientFunds}, {id: 2, ts: 1 << 33, kind: KindWithdrawal, fail: InsufficientFunds}}
	_, n := encodeBatch(nil, recs, walMaxBytes)
	require.Equal(t, 1, n)
}

// Every truncation and every single-byte change of a valid batch is an
// error, never a panic or a silent success.
func TestBatchRejectsDamage(t *testing.T) {
	recs := []txRecord{
		{id: 1, kind: KindDeposit, n: 2, userRef: 3, inline: [2]Entry{{0, -5, -5}, {3, 5, 5}}},
		{id: 2, kind: KindComposite, n: 2, extra: []Entry{{1, 2, 2}, {2, -2, -2}}},
	}
	val, _ := encodeBatch(nil, recs, walMaxBytes)
	decodeAll := func(v []byte) error {
		b, err := openBatch(v)
		if err != nil {
			return err
		}
		var tx walTx
		for {
			ok, err := b.next(&tx)
			if err != nil || !ok {
				return err
			}
		}
	}
	require.NoError(t, decodeAll(val))
	for i := 0; i < len(val); i++ {
		require.Error(t, decodeAll(val[:i]), "truncated to %d", i)
		d := clone(val)
		d[i] ^= 1 << (i % 8)
		require.Error(t, decodeAll(d), "byte %d flipped", i)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1000 { // garbage with a valid checksum must not panic
		g := make([]byte, rng.IntN(200))
		for i := range g {
			g[i] = byte(rng.Uint32())
		}
		if len(g) >= 4 {
			g = sealRecord(g[4:])
		}
		_ = decodeAll(g)
	}
}

func TestSnapshotChunksRoundTrip(t *testing.T) {
	bal := []int64{-9, 4, 5}
	got := make([]int64, 3)
	require.NoError(t, decodeBalanceChunk(encodeBalanceChunk(nil, 0, bal), 0, got))
	require.Equal(t, bal, got)
	c := encodeBalanceChunk(nil, 0, bal)
	c[len(c)-1] ^= 1
	require.Error(t, decodeBalanceChunk(c, 0, got))
	require.Error(t, decodeBalanceChunk(encodeBalanceChunk(nil, 2, bal), 2, got), "overruns MaxAccounts")
	refs := []refEntry{{1, 5}, {9, 7}}
	r, err := decodeRefsChunk(encodeRefsChunk(refs))
	require.NoError(t, err)
	require.Equal(t, refs, r)
}

// benchRecords are n records as the harness makes them: deposits and
// transfers of two entries, every eighth with a UserRef, every 64th a
// Duplicate, every 256th a three-leg composite.
func benchRecords(n int) []txRecord {
	recs := make([]txRecord, n)
	for i := range recs {
		r := &recs[i]
		*r = txRecord{id: uint64(i + 1), ts: 1_000_000 + int64(i), kind: KindDeposit + Kind(i%2)*(KindTransfer-KindDeposit), n: 2,
			inline: [2]Entry{{uint64(i % 1000), -int64(i), int64(i)}, {uint64(i%1000 + 1), int64(i), int64(2 * i)}}}
		switch {
		case i%256 == 255:
			r.kind, r.extra, r.n = KindComposite, []Entry{{1, -3, 5}, {2, 2, 9}, {3, 1, 1}}, 3
		case i%64 == 63:
			r.fail, r.userRef, r.dupOf, r.n = Duplicate, uint64(i), uint64(i/2), 0
		case i%8 == 7:
			r.userRef = uint64(i)
		}
	}
	return recs
}

// Records of every shape, a buffer that must grow, and the byte bound: the
// encoding decodes to the records, whatever the starting capacity.
func TestBatchEncodesEveryShape(t *testing.T) {
	recs := benchRecords(1000)
	for _, start := range [][]byte{nil, make([]byte, 1, 40), make([]byte, 1, 1<<20)} {
		var got []Result
		for rest := recs; len(rest) > 0; {
			v, n := encodeBatch(append([]byte(nil), start...), rest, 4096)
			require.Positive(t, n)
			require.LessOrEqual(t, len(v)-len(start), 4096+maxTxEncoded)
			part, err := decodeBatchAll(v[len(start):])
			require.NoError(t, err)
			require.Len(t, part, n)
			got = append(got, part...)
			rest = rest[n:]
		}
		require.Len(t, got, len(recs))
		for i := range recs {
			want := recs[i].result()
			if len(want.Entries) == 0 {
				want.Entries = nil
			}
			require.Equal(t, want, got[i])
		}
	}
}

// BenchmarkEncodeBatch is the WAL stage's encoding of one group commit of
// 4096 transactions into a reused buffer.
func BenchmarkEncodeBatch(b *testing.B) {
	recs := benchRecords(4096)
	buf, _ := encodeBatch(nil, recs, walMaxBytes)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = encodeBatch(buf[:0], recs, walMaxBytes)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/tx")
}
