//go:build !race

package chronon_test

const raceEnabled = false
