package ledger

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOverlayModel drives the overlay against a map: sets of random accounts
// (clustered, so probe runs collide and wrap around the table's end) with
// increasing ids, sweeps at random Snapshot indexes. After every step each
// account's slot exists exactly when the model says it is live or not yet
// swept, holds the model balance, and the occupancy count is right.
func TestOverlayModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	o := newOverlay(overlayMinSlots, 0)
	type slot struct {
		bal  int64
		last uint64
	}
	model := map[uint64]slot{}
	var id, snap uint64
	check := func() {
		require.Equal(t, len(model), o.n)
		for a, s := range model {
			i, ok := o.find(a)
			require.True(t, ok, "account %d lost", a)
			require.Equal(t, [numColumns]int64{s.bal, 0, 0, -s.bal}, o.slots[i].cols)
		}
		for i := range o.slots { // every slot reachable from its home
			if k := o.slots[i].acct; k != 0 {
				for j := o.home(uint64(k - 1)); j != uint64(i); j = (j + 1) & o.mask {
					require.NotZero(t, o.slots[j].acct, "empty slot inside a probe run")
				}
			}
		}
	}
	for step := range 20_000 {
		if o.n+2 > o.limit || rng.IntN(200) == 0 {
			snap = id - uint64(rng.IntN(int(min(id, 300))+1))
			o.sweep(snap)
			for a, s := range model {
				if s.last <= snap {
					delete(model, a)
				}
			}
			check()
			continue
		}
		id++
		for range 2 {
			a := uint64(rng.IntN(4096))
			if rng.IntN(4) == 0 {
				a = 1<<27 + uint64(rng.IntN(64))
			}
			b := rng.Int64()
			i, found := o.find(a)
			o.put(i, found, a, &[numColumns]int64{b, 0, 0, -b}, id)
			model[a] = slot{bal: b, last: id}
		}
		if step%97 == 0 {
			check()
		}
	}
	check()
	require.Positive(t, o.sweeps)
}

// TestOverlayBackPressure: a ledger whose overlay is far smaller than its
// rings (RingSize 1024, MaxEntries 255: up to 4096 slots' worth of
// composite legs per run against 1024 slots) still executes every
// transaction exactly as the model does, waiting for the Snapshotter when
// the overlay is full.
func TestOverlayBackPressure(t *testing.T) {
	l := openTest(t, Config{MaxAccounts: 100_000, RingSize: 1024, MaxEntries: 255, SnapshotEvery: 500})
	createAccounts(t, l, 100_000)
	rng := rand.New(rand.NewPCG(1, 2))
	bal := make([]int64, 100_000)
	var ops []Op
	for range 3000 {
		legs := make([]Leg, 2+rng.IntN(200))
		var sum int64
		for i := range legs[1:] {
			a := 1 + uint64(rng.IntN(99_999))
			legs[i+1] = Leg{Account: a, Delta: 1 + int64(rng.IntN(9))}
			sum += legs[i+1].Delta
		}
		legs[0] = Leg{Account: SystemAccount, Delta: -sum}
		ops = append(ops, Composite{Legs: legs})
		for _, lg := range legs {
			bal[lg.Account] += lg.Delta
		}
	}
	for i := 0; i < len(ops); i += 500 {
		_, last, err := l.SubmitBatch(ops[i:min(i+500, len(ops))])
		require.NoError(t, err)
		if i+500 >= len(ops) {
			require.NoError(t, l.Wait(t.Context(), last, Snapshot))
		}
	}
	for a, want := range bal {
		got, err := l.Balance(uint64(a))
		require.NoError(t, err)
		require.Equal(t, want, got, "account %d", a)
	}
	st := l.Stats()
	require.Equal(t, uint64(len(ops)), st.Outcomes[KindComposite][OK])
	require.Positive(t, st.OverlaySweeps)
	require.Positive(t, st.OverlayWaits, "the overlay never filled: no back pressure tested")
	t.Logf("overlay: %d sweeps, %d waits", st.OverlaySweeps, st.OverlayWaits)
}
