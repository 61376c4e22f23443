package exitcode

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/urfave/cli/v2"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOf(t *testing.T) {
	assert.Equal(t, 0, Of(nil))
	assert.Equal(t, 1, Of(errors.New("boom")))
	assert.Equal(t, 2, Of(Usage("bad flag %q", "x")))
	assert.Equal(t, 2, Of(fmt.Errorf("wrapped: %w", Usage("bad"))))
	assert.Equal(t, 1, Of(cli.Exit("failed", 1)))
	assert.EqualError(t, Usage("want %d args", 1), "want 1 args")
}
