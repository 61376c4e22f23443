package chronon_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanework/lanework/chronon"
)

type hooked struct {
	chronon.Base
	initErr, finishErr error
	inits, finishes    int
	ticks              int
}

func (h *hooked) Tick() { h.ticks++ }
func (h *hooked) Init() error {
	h.inits++
	return h.initErr
}
func (h *hooked) Finish() error {
	h.finishes++
	return h.finishErr
}

func TestInitAndFinishHooks(t *testing.T) {
	s := chronon.New()
	a, b := &hooked{}, &hooked{finishErr: errors.New("disk full")}
	require.NoError(t, s.Add("a", a))
	require.NoError(t, s.Add("b", b))
	require.NoError(t, s.Build())
	assert.Equal(t, 1, a.inits)
	assert.Zero(t, a.ticks, "Init runs before the first cycle")
	require.NoError(t, s.Run(3))
	err := s.Close()
	assert.EqualError(t, err, "chronon: finish b: disk full")
	assert.Equal(t, 1, a.finishes)
	assert.Equal(t, 1, b.finishes)

	s = chronon.New()
	require.NoError(t, s.Add("c", &hooked{initErr: errors.New("no config")}))
	err = s.Build()
	assert.EqualError(t, err, "chronon: init c: no config")
	assert.ErrorIs(t, s.Run(1), chronon.ErrNotBuilt)
}

type initPanics struct{ hooked }

func (p *initPanics) Init() error { panic("bad init") }

func TestInitPanicBecomesError(t *testing.T) {
	s := chronon.New()
	require.NoError(t, s.Add("p", &initPanics{}))
	err := s.Build()
	var ue *chronon.UnitError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "p", ue.Unit)
	assert.Equal(t, uint64(0), ue.Cycle)
}

func TestUnitLookupAndNames(t *testing.T) {
	s := chronon.New()
	h := &hooked{}
	require.NoError(t, s.Add("h", h))
	u, ok := s.Unit("h")
	assert.True(t, ok)
	assert.Same(t, h, u)
	_, ok = s.Unit("nope")
	assert.False(t, ok)
	assert.Equal(t, "h", h.Name())
}
