package pressure

import "fmt"

// Level is the pressure of the whole pipeline, shared by all its stages.
// New work moves it straight to High; it falls one step at a time, High to
// Low to Idle, only after a sustained empty streak.
type Level uint32

const (
	// Idle: the pipeline is dry; stages that find nothing park (except under
	// LowLatency).
	Idle Level = iota
	// Low: the pipeline has been empty for a while; stages yield.
	Low
	// High: work is flowing; stages spin (within the GOMAXPROCS limit) or yield.
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
