package chronon

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

type pfNode struct {
	Base
	In  InPort[uint64]
	Out [2]OutPort[uint64]
}

func (n *pfNode) Tick() {
	for {
		if _, ok := n.In.TryReceive(); !ok {
			break
		}
	}
	for i := range n.Out {
		n.Out[i].Send(n.Cycle())
	}
}

func pfModel(t *testing.T, units int) (*Simulation, []*pfNode) {
	s := New()
	ns := make([]*pfNode, units)
	for i := range ns {
		ns[i] = &pfNode{}
		require.NoError(t, s.Add(fmt.Sprint("n", i), ns[i]))
	}
	for i, n := range ns {
		require.NoError(t, Connect(&n.Out[0], &ns[(i+1)%units].In, Capacity(4)))
		require.NoError(t, Connect(&n.Out[1], &ns[(i*7+3)%units].In, Delay(2), Capacity(4)))
	}
	require.NoError(t, s.Build())
	return s, ns
}

// TestPrefetchPlan checks that a large model lists, before each unit, the
// next unit's lines (its record, its ports, its connections' sides), and
// that a small one lists nothing.
func TestPrefetchPlan(t *testing.T) {
	s, _ := pfModel(t, 10)
	require.Nil(t, s.pf, "a model in a core's caches does not prefetch")

	s, _ = pfModel(t, 1000)
	require.Len(t, s.pf, len(s.order))
	line := func(p unsafe.Pointer) uintptr { return uintptr(p) &^ (cacheLine - 1) }
	for i, lines := range s.pf {
		u := s.order[(i+1)%len(s.order)]
		n := u.unit.(*pfNode)
		want := []uintptr{line(unsafe.Pointer(u)), line(unsafe.Pointer(&u.cycle)), line(unsafe.Pointer(&n.In)), line(unsafe.Pointer(&n.In.merge))}
		for j := range n.Out {
			o := &n.Out[j]
			k := o.conns[0]
			want = append(want, line(unsafe.Pointer(&o.epoch)), line(unsafe.Pointer(&k.pushes)))
		}
		for _, k := range n.In.conns {
			want = append(want, line(unsafe.Pointer(&k.pops)))
		}
		for _, w := range want {
			require.Contains(t, lines, w, "unit %s", u.name)
		}
	}
	require.NoError(t, s.Run(100))
}

type pfWide struct {
	Base
	In  [40]InPort[uint64]
	Out [40]OutPort[uint64]
}

func (n *pfWide) Tick() {}

// TestPrefetchPlanCap checks that a unit with many ports lists at most
// maxPrefetchLines lines.
func TestPrefetchPlanCap(t *testing.T) {
	s := New()
	ns := make([]*pfWide, 400)
	for i := range ns {
		ns[i] = &pfWide{}
		require.NoError(t, s.Add(fmt.Sprint("w", i), ns[i]))
	}
	for i, n := range ns {
		for j := range n.Out {
			require.NoError(t, Connect(&n.Out[j], &ns[(i+j+1)%len(ns)].In[j], Capacity(4)))
		}
	}
	require.NoError(t, s.Build())
	require.Len(t, s.pf, len(ns))
	for _, lines := range s.pf {
		require.LessOrEqual(t, len(lines), maxPrefetchLines)
		require.NotEmpty(t, lines)
	}
}
