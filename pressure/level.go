package pressure

import "fmt"

// Level is the pressure of the whole pipeline, shared by all its stages.
// New work moves it straight to High. It falls one step at a time, High to
// Low to Idle, after an empty streak of the strategy's length, and straight
// to Idle once every stage has announced a park.
type Level uint32

const (
	// Idle: the pipeline is dry; a stage that finds nothing parks (never
	// under LowLatency).
	Idle Level = iota
	// Low: the pipeline has been empty for a while; an empty stage takes no
	// new spin slot (except under LowLatency).
	Low
	// High: work is flowing; an empty stage may spin, within the GOMAXPROCS
	// limit, before it yields.
	High
)

var levelNames = [...]string{Idle: "idle", Low: "low", High: "high"}

// String returns "idle", "low" or "high", or "Level(N)" for other values.
func (l Level) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("Level(%d)", uint32(l))
}
