package ledger

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBatchRoundTrip(t *testing.T) {
	recs := []txRecord{
		{id: 6, ts: 999, kind: KindCreateAccount, userRef: 4},
		{id: 7, ts: 1000, kind: KindDeposit, n: 2, inline: [2]cellEntry{{acct: 0, delta: 5, value: 5, col: DebitsPosted}, {acct: 3, delta: 5, value: 5, col: CreditsPosted}}},
		{id: 8, ts: 1001, kind: KindWithdrawal, fail: ExceedsCredits, userRef: 99},
		{id: 9, ts: 1001, kind: KindTransfer, fail: Duplicate, userRef: 99, orig: 8},
		{id: 10, ts: 5000, kind: KindTransfer, n: 2, ledger: 7, code: 1<<16 - 1, userData: 1<<64 - 1, tflags: Pending, timeout: 1<<32 - 1,
			inline: [2]cellEntry{{acct: 1, delta: 5, value: 5, col: DebitsPending}, {acct: 2, delta: 5, value: 5, col: CreditsPending}}},
		{id: 11, ts: 5000, kind: KindTransfer, fail: ExceedsCredits, ledger: 7, code: 2, userData: 3},
		{id: 12, ts: 5000, kind: KindComposite, n: 3, extra: ext([]cellEntry{{acct: 1, delta: 2, value: 2, col: CreditsPosted}, {acct: 2, delta: 3, value: 3, col: DebitsPosted}, {acct: 1, delta: 1, value: 3, col: CreditsPosted}})},
	}
	recs[0].setAccount(acctMeta{id: 1 << 50, userData: [2]uint64{7, 1<<64 - 1}, ledger: 1<<32 - 1, code: 1<<16 - 1, flags: accountFlagsMask})
	val, n := encodeBatch(nil, recs, walMaxBytes)
	require.Equal(t, len(recs), n)
	b, err := openBatch(val)
	require.NoError(t, err)
	require.Equal(t, uint64(6), b.first)
	require.Equal(t, uint64(12), b.last())
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
	recs := []txRecord{{id: 1, ts: 0, kind: KindWithdrawal, fail: ExceedsCredits}, {id: 2, ts: 1 << 33, kind: KindWithdrawal, fail: ExceedsCredits}}
	_, n := encodeBatch(nil, recs, walMaxBytes)
	require.Equal(t, 1, n)
}

// Every truncation and every single-byte change of a valid batch is an
// error, never a panic or a silent success.
func TestBatchRejectsDamage(t *testing.T) {
	recs := []txRecord{
		{id: 1, kind: KindDeposit, n: 2, userRef: 3, inline: [2]cellEntry{{acct: 0, delta: 5, value: 5, col: DebitsPosted}, {acct: 3, delta: 5, value: 5, col: CreditsPosted}}},
		{id: 2, kind: KindComposite, n: 2, extra: ext([]cellEntry{{acct: 1, delta: 2, value: 2, col: CreditsPosted}, {acct: 2, delta: 2, value: 2, col: DebitsPosted}})},
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
	cells := []int64{9, 0, 1<<63 - 1}
	// Sealed in place, into a reused buffer, by either encoder: the bytes
	// of crc32c(header ++ uvarints) ++ header ++ uvarints.
	body := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint64(nil, 4), uint32(len(cells)))
	for _, v := range cells {
		body = binary.AppendUvarint(body, uint64(v))
	}
	want := sealRecord(body)
	require.Equal(t, want, encodeCellChunk(make([]byte, 100), 4, cells))
	from := make([]atomic.Int64, len(cells))
	for i, v := range cells {
		from[i].Store(v)
	}
	require.Equal(t, want, encodeCellChunkFrom(encodeCellChunk(nil, 9, []int64{1, 2, 3, 4, 5}), 4, from))
	got, err := decodeCellChunk(encodeCellChunk(nil, 4, cells), 4, 3, nil)
	require.NoError(t, err)
	require.Equal(t, cells, got)
	c := encodeCellChunk(nil, 0, cells)
	c[len(c)-1] ^= 1
	_, err = decodeCellChunk(c, 0, 3, nil)
	require.Error(t, err)
	_, err = decodeCellChunk(encodeCellChunk(nil, 0, cells), 0, 4, nil)
	require.Error(t, err, "fewer cells than the manifest says")
	_, err = decodeCellChunk(encodeCellChunk(nil, 0, []int64{-1}), 0, 1, nil)
	require.Error(t, err, "a column above 2^63-1")
	m := acctMeta{id: 7, ledger: 1, code: 2, flags: History, userData: [2]uint64{3, 4}}
	gm, err := decodeAccountRecord(encodeAccountRecord(m))
	require.NoError(t, err)
	require.Equal(t, []acctMeta{m}, gm)
	m2 := acctMeta{id: 1 << 40, ledger: 3, flags: DebitsMustNotExceedCredits}
	gm, err = decodeAccountRecord(encodeAccountRecord(m, m2))
	require.NoError(t, err)
	require.Equal(t, []acctMeta{m, m2}, gm)
	_, err = decodeAccountRecord(sealRecord(nil))
	require.Error(t, err, "no account")
	_, err = decodeAccountRecord(sealRecord(make([]byte, accountLen+1)))
	require.Error(t, err, "a partial account")
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
			inline: [2]cellEntry{{acct: uint64(i % 1000), delta: int64(i), value: int64(i), col: DebitsPosted},
				{acct: uint64(i%1000 + 1), delta: int64(i), value: int64(2 * i), col: CreditsPosted}}}
		switch {
		case i%256 == 255:
			r.kind = KindComposite
			r.setEntries([]cellEntry{{acct: 1, delta: 3, value: 5, col: DebitsPosted},
				{acct: 2, delta: 2, value: 9, col: CreditsPosted}, {acct: 3, delta: 1, value: 1, col: CreditsPosted}})
		case i%64 == 63:
			r.fail, r.userRef, r.orig, r.n = Duplicate, uint64(i), uint64(i/2), 0
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

// ext wraps entries that do not fit a record's inline space.
func ext(es []cellEntry) *recExtra { return &recExtra{entries: es} }

// encodeBatchByField is the batch layout appended field by field, as
// encodeBatch wrote it before it grew once per record and wrote at fixed
// offsets: the reference the fast encoder must match byte for byte.
func encodeBatchByField(dst []byte, recs []txRecord, maxBytes int) ([]byte, int) {
	le := binary.LittleEndian
	start := len(dst)
	base := recs[0].ts
	dst = le.AppendUint32(dst, 0)
	dst = le.AppendUint64(dst, recs[0].id)
	dst = le.AppendUint32(dst, 0)
	dst = le.AppendUint64(dst, uint64(base))
	n := 0
	entry := func(dst []byte, e cellEntry) []byte {
		dst = le.AppendUint64(dst, e.acct)
		dst = append(dst, byte(e.col))
		dst = le.AppendUint64(dst, uint64(e.delta))
		return le.AppendUint64(dst, uint64(e.value))
	}
	for i := range recs {
		r := &recs[i]
		d := r.ts - base
		if d < 0 || d > math.MaxUint32 || (n > 0 && len(dst)-start+r.encodedLen() > maxBytes) {
			break
		}
		k := byte(r.kind)
		if r.userRef != 0 {
			k |= hasRefFlag
		}
		if r.hasTransfer() {
			k |= hasXferFlag
		}
		if r.extra != nil && len(r.extra.expired) > 0 {
			k |= hasExpiryFlag
		}
		dst = append(dst, k, byte(r.fail))
		dst = le.AppendUint16(dst, uint16(r.n))
		dst = le.AppendUint32(dst, uint32(d))
		if r.userRef != 0 {
			dst = le.AppendUint64(dst, r.userRef)
		}
		if r.fail == Duplicate {
			dst = le.AppendUint64(dst, r.orig)
		}
		if r.kind == KindCreateAccount {
			m := r.account()
			dst = le.AppendUint64(dst, m.id)
			dst = le.AppendUint64(dst, m.userData[0])
			dst = le.AppendUint64(dst, m.userData[1])
			dst = le.AppendUint32(dst, m.ledger)
			dst = le.AppendUint16(dst, m.code)
			dst = le.AppendUint16(dst, uint16(m.flags))
		}
		if r.hasTransfer() {
			dst = le.AppendUint32(dst, r.ledger)
			dst = le.AppendUint16(dst, r.code)
			dst = le.AppendUint16(dst, uint16(r.tflags))
			dst = le.AppendUint64(dst, r.userData)
			if r.tflags&resolving != 0 {
				dst = le.AppendUint64(dst, r.orig)
			}
			if r.tflags&Pending != 0 {
				dst = le.AppendUint32(dst, r.timeout)
			}
		}
		if r.extra != nil && len(r.extra.expired) > 0 {
			dst = le.AppendUint16(dst, uint16(len(r.extra.expired)))
			for _, id := range r.extra.expired {
				dst = le.AppendUint64(dst, id)
			}
			for _, e := range r.extra.exp {
				dst = entry(dst, e)
			}
		}
		for _, e := range r.entries() {
			dst = entry(dst, e)
		}
		n++
	}
	b := dst[start:]
	le.PutUint32(b[12:], uint32(n))
	le.PutUint32(b[0:], crc32.Checksum(b[4:], castagnoli))
	return dst, n
}

// encodeBatch writes the bytes the field-by-field layout gives, for
// records of every shape (the fuzz seeds' and the harness's), into buffers
// that must grow or have room, and splits batches at the same record.
func TestBatchEncodingMatchesFieldByField(t *testing.T) {
	sets := [][]txRecord{benchRecords(1000)}
	for _, s := range walSeeds() {
		if recs, err := decodeBatchRecords(s); err == nil && len(recs) > 0 {
			sets = append(sets, recs)
		}
	}
	require.Greater(t, len(sets), 4)
	var withRefs []txRecord // the seeds' records again, each with a UserRef
	for _, recs := range sets[1:] {
		for _, r := range recs {
			r.userRef = r.id + 1
			withRefs = append(withRefs, r)
		}
	}
	sets = append(sets, withRefs)
	var shapes [8]int // by the kind byte's flags
	for _, recs := range sets {
		for _, start := range [][]byte{nil, make([]byte, 3, 40), make([]byte, 3, 1<<20)} {
			for _, maxBytes := range []int{walMaxBytes, 300} {
				for rest := recs; len(rest) > 0; {
					want, wn := encodeBatchByField(append([]byte(nil), start...), rest, maxBytes)
					got, n := encodeBatch(append([]byte(nil), start...), rest, maxBytes)
					require.Equal(t, wn, n)
					require.Equal(t, want, got)
					for i := range rest[:n] {
						r := &rest[i]
						shapes[btoi(r.userRef != 0)|btoi(r.hasTransfer())<<1|btoi(r.extra != nil && len(r.extra.expired) > 0)<<2]++
					}
					rest = rest[n:]
				}
			}
		}
	}
	for s, c := range shapes {
		require.Positive(t, c, "no record with flags %03b (expiry, transfer, ref)", s)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// BenchmarkDecodeBatch is recovery's decoding (batchReader.next, checks
// included) of one such batch, touchAhead transactions at a time as
// replayBatch decodes them.
func BenchmarkDecodeBatch(b *testing.B) {
	recs := benchRecords(4096)
	buf, _ := encodeBatch(nil, recs, walMaxBytes)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	txs := new([touchAhead]walTx)
	for b.Loop() {
		r, err := parseBatch(buf)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; ; i = (i + 1) % touchAhead {
			ok, err := r.next(&txs[i])
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/tx")
}

// accountsEqual compares accounts with their encoding, by memory where the
// layouts agree and by decoding elsewhere; both ways agree, and any
// changed byte or length is a difference.
func TestAccountsEqual(t *testing.T) {
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" {
		require.True(t, acctMetaIsLayout, "little-endian hosts take the memory comparison")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ms := make([]acctMeta, 100)
	var b []byte
	for i := range ms {
		ms[i] = acctMeta{id: rng.Uint64(), userData: [2]uint64{rng.Uint64(), rng.Uint64()}, ledger: rng.Uint32(),
			code: uint16(rng.Uint32()), flags: AccountFlags(rng.Uint32())}
		b = appendAccount(b, ms[i])
	}
	require.True(t, accountsEqual(b, ms))
	require.True(t, accountsEqualDecoded(b, ms))
	require.False(t, accountsEqual(b[:len(b)-1], ms))
	for i := 0; i < len(b); i += 7 {
		b[i] ^= 0x10
		require.False(t, accountsEqual(b, ms), "byte %d", i)
		require.False(t, accountsEqualDecoded(b, ms), "byte %d", i)
		b[i] ^= 0x10
	}
}
