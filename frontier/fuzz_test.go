package frontier

import (
	"testing"

	"github.com/stretchr/testify/require"
)

var fuzzLaneCounts = [...]int{1, 2, 3, 16, 31, 32, 33, 64, 65, 130}

// FuzzMergeOrder interprets its input as a program of pushes (with arrive
// cycles free to go backwards within a lane), pops, filtered pops, flushes
// and receiver cycles, runs it on a merger and on the reference model, and
// requires identical answers.
func FuzzMergeOrder(f *testing.F) {
	f.Add([]byte{0, 0, 3, 0, 1, 5, 0, 2, 5, 1, 9})
	f.Add([]byte{5, 0, 1, 0, 7, 1, 0, 7, 2, 0, 3, 7, 3, 1, 6, 1, 9})
	f.Add([]byte{6, 3, 2, 5, 1, 0, 0, 0, 0, 1, 0, 0, 2, 0, 5, 2, 1, 9, 1, 9, 5, 1, 1, 9})
	f.Add([]byte{9, 2, 4, 0, 128, 3, 0, 5, 4, 0, 7, 0, 4, 3, 3, 2, 1, 3, 4, 1, 9, 6, 0})
	f.Add([]byte{2, 1, 0, 0, 0, 1, 0, 1, 2, 5, 1, 1, 3, 1, 9, 4, 0, 0, 0, 1, 1, 9})
	f.Add([]byte{8, 0, 7, 0, 10, 0, 0, 50, 0, 0, 90, 4, 0, 20, 4, 0, 1, 9, 6, 0, 0, 63, 1})
	f.Fuzz(func(t *testing.T, prog []byte) { runProgram(t, prog) })
}

func runProgram(t *testing.T, prog []byte) {
	next := func() byte {
		if len(prog) == 0 {
			return 0
		}
		b := prog[0]
		prog = prog[1:]
		return b
	}
	lanes := fuzzLaneCounts[int(next())%len(fuzzLaneCounts)]
	capacity := int(next() % 5) // 0: unbounded
	depthBase := int(next()%8) + 1
	var m *Merger[int]
	if capacity > 0 {
		var err error
		m, err = NewBounded[int](capacity)
		require.NoError(t, err)
	} else {
		m = New[int]()
	}
	ref := newRefModel(capacity)
	ls := make([]*Lane[int], lanes)
	for i := range ls {
		conn := uint64(i*7%5) + uint64(depthBase%2)*uint64(i)
		depth := 1 + (depthBase+i)%8
		l, err := m.AddLane(conn, depth)
		require.NoError(t, err)
		ls[i] = l
		ref.addLane(conn, depth)
	}
	var cycle uint64
	v := 0
	overflows := uint64(0)
	for len(prog) > 0 {
		op, a, b := next()%8, next(), next()
		switch op {
		case 0, 7: // push; arrive may go backwards within a lane
			i := int(a) % lanes
			arrive := cycle + uint64(b%16)
			ok := ls[i].TryPush(arrive, v)
			if ref.mustFit(i) {
				require.True(t, ok, "push to lane %d with room", i)
			} else if !ref.mayFit(i) {
				require.False(t, ok, "push to full lane %d", i)
			}
			if ok {
				ref.push(i, arrive, v)
			} else {
				overflows++
			}
			v++
		case 1: // pop
			val, arr, ok := m.TryPop(cycle + uint64(a%4))
			want, wok := ref.pop(cycle + uint64(a%4))
			require.Equal(t, wok, ok)
			if ok {
				require.Equal(t, want, popped{arr, val})
			}
		case 2: // filtered pop
			k, r := int(a%3)+2, int(b%3)
			var seen, rseen []int
			keep := func(_ uint64, x *int) bool { seen = append(seen, *x); return *x%k != r }
			rkeep := func(_ uint64, x *int) bool { rseen = append(rseen, *x); return *x%k != r }
			val, arr, ok := m.PopFiltered(cycle, keep)
			want, wok := ref.popFiltered(cycle, rkeep)
			require.Equal(t, wok, ok)
			require.Equal(t, rseen, seen)
			if ok {
				require.Equal(t, want, popped{arr, val})
			}
		case 3: // selective flush
			k, r := int(a%4)+1, int(b%4)
			var seen, rseen []int
			drop := func(_ uint64, x *int) bool { seen = append(seen, *x); return *x%k == r }
			rdrop := func(_ uint64, x *int) bool { rseen = append(rseen, *x); return *x%k == r }
			require.Equal(t, ref.flushIf(rdrop), m.FlushIf(drop))
			require.ElementsMatch(t, rseen, seen)
		case 4: // flush
			if a%4 == 0 {
				require.Equal(t, ref.flush(), m.Flush())
			}
		case 5: // next receiver cycle
			cycle += uint64(a % 3)
			m.PrepareCycle(cycle)
			ref.prepare(cycle)
		case 6: // queries
			c := cycle + uint64(a%4)
			require.Equal(t, ref.hasReady(c), m.HasReady(c))
			ma, mok := m.MinArrivalCycle()
			ra, rok := ref.minArrival()
			require.Equal(t, rok, mok)
			require.Equal(t, ra, ma)
			require.Equal(t, ref.empty(), m.Empty())
		}
	}
	require.Equal(t, overflows, m.Overflows())
	require.Equal(t, ref.flush(), m.Flush())
	require.True(t, m.Empty())
}
