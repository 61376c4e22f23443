package chronon

import (
	"errors"
	"fmt"
	"strings"
)

// Errors returned by the simulator; match them with errors.Is.
var (
	// ErrBuilt is returned by calls that change the topology after Build.
	ErrBuilt = errors.New("chronon: simulation already built")
	// ErrNotBuilt is returned by Run and its variants before Build.
	ErrNotBuilt = errors.New("chronon: simulation not built")
	// ErrTopology reports an invalid topology: duplicate or unknown names,
	// unbound or foreign ports, bad connection parameters.
	ErrTopology = errors.New("chronon: invalid topology")
	// ErrZeroDelayCycle reports a cycle of zero-delay connections; see
	// CycleError.
	ErrZeroDelayCycle = errors.New("chronon: zero-delay cycle")
	// ErrOverflow reports that a lane's physical storage overflowed. It is
	// a correctness failure of the model (an unbounded edge whose consumer
	// does not keep up), never back pressure; see OverflowError.
	ErrOverflow = errors.New("chronon: lane overflow")
	// ErrCycleLimit is returned by RunUntilDone and RunUntilTermination when
	// the cycle limit passes first.
	ErrCycleLimit = errors.New("chronon: cycle limit reached")
	// ErrUnitPanic wraps a panic raised inside a unit; see UnitError.
	ErrUnitPanic = errors.New("chronon: unit panicked")
)

// CycleError describes a zero-delay cycle found by Build. Edges lists the
// connections of the cycle in order, each as "unit.port -> unit.port".
type CycleError struct {
	Units []string
	Edges []string
}

// Error names the cycle and the fix.
func (e *CycleError) Error() string {
	if len(e.Units) == 1 {
		return fmt.Sprintf("chronon: zero-delay self-loop on unit %s: %s; add a registered delay (Delay(1) or more) or merge the logic into the unit's Tick",
			e.Units[0], strings.Join(e.Edges, ", "))
	}
	return fmt.Sprintf("chronon: zero-delay cycle through units %s: %s; add a registered delay (Delay(1) or more) on one of these connections or merge the logic into one unit",
		strings.Join(e.Units, ", "), strings.Join(e.Edges, ", "))
}

// Is makes errors.Is(err, ErrZeroDelayCycle) true.
func (e *CycleError) Is(target error) bool { return target == ErrZeroDelayCycle }

// OverflowError reports the first physical lane overflow of a run.
type OverflowError struct {
	Conn  string // "unit.port -> unit.port"
	Cycle uint64
}

// Error names the connection and cycle.
func (e *OverflowError) Error() string {
	return fmt.Sprintf("chronon: lane overflow on %s at cycle %d: the edge is unbounded and its consumer does not keep up; give it a Capacity", e.Conn, e.Cycle)
}

// Is makes errors.Is(err, ErrOverflow) true.
func (e *OverflowError) Is(target error) bool { return target == ErrOverflow }

// UnitError reports a panic raised by a unit's Tick (or hook).
type UnitError struct {
	Unit  string
	Cycle uint64
	Value any // the value passed to panic
}

// Error names the unit, the cycle and the panic value.
func (e *UnitError) Error() string {
	return fmt.Sprintf("chronon: unit %q panicked at cycle %d: %v", e.Unit, e.Cycle, e.Value)
}

// Is makes errors.Is(err, ErrUnitPanic) true.
func (e *UnitError) Is(target error) bool { return target == ErrUnitPanic }

// Unwrap returns the panic value if it is an error.
func (e *UnitError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

func topoErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrTopology}, args...)...)
}
