package chronon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lanework/lanework/chronon"
)

func TestStageRegister(t *testing.T) {
	var r chronon.StageRegister[int]
	assert.False(t, r.Valid())
	assert.Nil(t, r.Value())
	assert.True(t, r.Load(1))
	assert.False(t, r.Load(2), "a full latch stalls")
	assert.Equal(t, 1, *r.Value())
	*r.Value() = 3
	assert.False(t, r.Flush(func(v *int) bool { return *v > 5 }))
	assert.True(t, r.Valid())
	assert.True(t, r.Flush(func(v *int) bool { return *v == 3 }))
	assert.False(t, r.Valid())
	_, ok := r.Take()
	assert.False(t, ok)
	assert.True(t, r.Load(4))
	v, ok := r.Take()
	assert.True(t, ok)
	assert.Equal(t, 4, v)
	assert.False(t, r.Valid())
}
