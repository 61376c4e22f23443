package chronon

import (
	"fmt"
	"math/bits"
)

// Arbiter grants one of up to 64 requesters per call. A fixed-priority
// arbiter grants the lowest-numbered requester; a round-robin arbiter
// grants the first requester at or after the one following its last grant,
// wrapping, so every persistent requester is served within n grants.
// Requests are a bit set (bit i: requester i). Plain unit state: only the
// owning unit uses it, and Grant allocates nothing.
type Arbiter struct {
	n    int
	rr   bool
	next int // round robin: the requester with the highest priority
}

// NewFixedArbiter returns a fixed-priority arbiter of n requesters (1 to 64).
func NewFixedArbiter(n int) (*Arbiter, error) { return newArbiter(n, false) }

// NewRoundRobinArbiter returns a round-robin arbiter of n requesters (1 to
// 64), starting with requester 0.
func NewRoundRobinArbiter(n int) (*Arbiter, error) { return newArbiter(n, true) }

func newArbiter(n int, rr bool) (*Arbiter, error) {
	if n < 1 || n > 64 {
		return nil, fmt.Errorf("%w: an arbiter has 1 to 64 requesters, not %d", ErrTopology, n)
	}
	return &Arbiter{n: n, rr: rr}, nil
}

// Grant returns the requester granted among the bits of req (bits from n
// on are ignored), or -1 when none is set. A round-robin grant moves the
// priority past the granted requester.
func (a *Arbiter) Grant(req uint64) int {
	if a.n < 64 {
		req &= 1<<a.n - 1
	}
	if req == 0 {
		return -1
	}
	if !a.rr {
		return bits.TrailingZeros64(req)
	}
	// Rotate so that requester next is bit 0, take the lowest, rotate
	// back; a requester below next wraps to 64-next+i and back to i.
	i := (bits.TrailingZeros64(bits.RotateLeft64(req, -a.next)) + a.next) % 64
	a.next = (i + 1) % a.n
	return i
}

// Next returns the round-robin arbiter's highest-priority requester (0 for
// a fixed one).
func (a *Arbiter) Next() int { return a.next }

// Advance gives the highest priority to the requester after i, as a grant
// of i would, without granting: for a requester served outside Grant.
func (a *Arbiter) Advance(i int) {
	if a.rr {
		a.next = (i + 1) % a.n
	}
}
