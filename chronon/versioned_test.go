package chronon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

// TestVersionedRegisterAgainstLog compares At with a full log of writes.
func TestVersionedRegisterAgainstLog(t *testing.T) {
	const depth = 4
	r, err := chronon.NewVersionedRegister(depth, -1)
	require.NoError(t, err)
	type w struct {
		c uint64
		v int
	}
	log := []w{{0, -1}}
	c := uint64(0)
	x := uint64(9)
	for i := range 2000 {
		x = mix(x)
		c += x % 3 // same-cycle writes replace
		r.Write(c, i)
		if log[len(log)-1].c == c {
			log[len(log)-1].v = i
		} else {
			log = append(log, w{c, i})
		}
		v, at := r.Read()
		require.Equal(t, i, v)
		require.Equal(t, c, at)
		for q := c - min(c, 12); q <= c+1; q++ {
			// The newest log entry at or before q, and whether it is one
			// of the last depth entries.
			k := len(log) - 1
			for log[k].c > q {
				k--
			}
			v, wc, ok := r.At(q)
			if len(log)-1-k >= depth {
				require.False(t, ok, "cycle %d is older than the history", q)
				continue
			}
			require.True(t, ok, "cycle %d after write %d", q, i)
			require.Equal(t, log[k].v, v)
			require.Equal(t, log[k].c, wc)
		}
	}
	assert.Panics(t, func() { r.Write(c-1, 0) })
	_, err = chronon.NewVersionedRegister(0, 0)
	assert.ErrorIs(t, err, chronon.ErrTopology)
}
