//go:build race

package chronon_test

// raceEnabled scales repetition counts down under the race detector.
const raceEnabled = true
