package pressure

import (
	"errors"
	"fmt"
	"time"
)

// WaitStrategy says what matters more to a pipeline when its stages run out of
// work: latency or CPU. The thresholds behind each strategy are internal; see
// docs/pressure.md for the values and the measurements that chose them.
//
// The zero value is Balanced.
type WaitStrategy uint8

const (
	// Balanced spins briefly, then yields, and parks about 30 µs after the
	// stage last had work. It is the default.
	Balanced WaitStrategy = iota
	// LowLatency never parks: an empty stage spins, then keeps polling with
	// runtime.Gosched between polls (it yields sooner when the stages that
	// want to spin outnumber the Ps). Minimum latency, maximum CPU.
	LowLatency
	// LowCPU parks soon after the pipeline runs dry. Minimum CPU, at the price
	// of a park/unpark on the first item of most bursts.
	LowCPU
)

// ErrUnknownStrategy is returned (wrapped) by ParseWaitStrategy and
// UnmarshalText for a name that is not a WaitStrategy.
var ErrUnknownStrategy = errors.New("pressure: unknown wait strategy")

var strategyNames = [...]string{
	Balanced:   "balanced",
	LowLatency: "low-latency",
	LowCPU:     "low-cpu",
}

// ParseWaitStrategy returns the strategy named s: "low-latency", "balanced" or
// "low-cpu". Any other name yields an error that matches ErrUnknownStrategy and
// lists the valid names.
func ParseWaitStrategy(s string) (WaitStrategy, error) {
	for w, name := range strategyNames {
		if s == name {
			return WaitStrategy(w), nil
		}
	}
	return Balanced, fmt.Errorf("%w %q (valid: %q, %q, %q)", ErrUnknownStrategy, s,
		strategyNames[LowLatency], strategyNames[Balanced], strategyNames[LowCPU])
}

// String returns the strategy's name as accepted by ParseWaitStrategy, or
// "WaitStrategy(N)" for a value outside the defined constants.
func (w WaitStrategy) String() string {
	if int(w) < len(strategyNames) {
		return strategyNames[w]
	}
	return fmt.Sprintf("WaitStrategy(%d)", uint8(w))
}

// MarshalText implements encoding.TextMarshaler. It fails for a value outside
// the defined constants, so an invalid strategy is never written to a config.
func (w WaitStrategy) MarshalText() ([]byte, error) {
	if int(w) >= len(strategyNames) {
		return nil, fmt.Errorf("%w: %d", ErrUnknownStrategy, uint8(w))
	}
	return []byte(strategyNames[w]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseWaitStrategy.
// On error *w is left unchanged.
func (w *WaitStrategy) UnmarshalText(text []byte) error {
	v, err := ParseWaitStrategy(string(text))
	if err != nil {
		return err
	}
	*w = v
	return nil
}

// params are the internal thresholds of one strategy. An empty streak of a
// stage runs through up to three phases: free spinning (no shared state
// touched), spinning on a spin slot (bounded by the number of Ps), and
// yielding. Its clock lowers the global level after highToLow, and to Idle
// after a further lowToIdle. Under the parking strategies it parks at Idle,
// or once it has yielded for yieldFor (no slot) or holdFor (a slot holder
// past its spin phase), at any level.
type params struct {
	freeSpin  uint64        // empty polls spun before competing for a spin slot
	spin      uint64        // further polls spun on a slot; 0 means unbounded
	highToLow time.Duration // streak time before High -> Low
	lowToIdle time.Duration // further streak time before Low -> Idle
	// minPolls is the number of empty polls a stage must also have made
	// since its clock started to lower the level one step (twice that for
	// the second step). Time alone is not enough: a goroutine that the OS
	// or the Go scheduler did not run for a millisecond has not watched its
	// input for a millisecond.
	minPolls uint64
	tickMask uint64 // a yielding stage reads the clock when streak&tickMask == 0
	park     bool   // whether the stage parks (at Idle, or when out of yield budget)
	// yieldFor is how long a stage without a spin slot yields before it
	// parks at any level (parking strategies only; 0: at once).
	yieldFor time.Duration
	// holdFor is how long a spin-slot holder yields past its spin phase
	// before it parks at any level (parking strategies only; 0: until the
	// level falls to Idle).
	holdFor time.Duration
}

// strategyParams holds the thresholds per strategy. How they were chosen is
// documented, with the measurements, in docs/pressure.md.
var strategyParams = [...]params{
	Balanced:   {freeSpin: 64, spin: 256, highToLow: 100 * time.Microsecond, lowToIdle: 500 * time.Microsecond, minPolls: 32, tickMask: 7, park: true, yieldFor: 20 * time.Microsecond, holdFor: 20 * time.Microsecond},
	LowLatency: {freeSpin: 64, spin: 2048, highToLow: 1 * time.Millisecond, lowToIdle: 10 * time.Millisecond, minPolls: 32, tickMask: 7, park: false},
	LowCPU:     {freeSpin: 16, spin: 128, highToLow: 10 * time.Microsecond, lowToIdle: 40 * time.Microsecond, minPolls: 32, tickMask: 7, park: true, yieldFor: 0, holdFor: 5 * time.Microsecond},
}

func (w WaitStrategy) params() params {
	if int(w) < len(strategyParams) {
		return strategyParams[w]
	}
	return strategyParams[Balanced]
}
