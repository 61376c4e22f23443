package chronon

import "fmt"

// Range selects message keys for InPort.FlushKeys. Keys are ages, such as
// instruction sequence numbers: a larger key is younger. The zero Range
// matches nothing.
type Range struct {
	kind   rangeKind
	lo, hi uint64
}

type rangeKind uint8

const (
	rangeNone rangeKind = iota
	rangeYounger
	rangeAtOrYounger
	rangeOlder
	rangeAtOrOlder
	rangeOutside
)

// YoungerThan matches keys greater than k.
func YoungerThan(k uint64) Range { return Range{kind: rangeYounger, lo: k} }

// AtOrYounger matches keys greater than or equal to k.
func AtOrYounger(k uint64) Range { return Range{kind: rangeAtOrYounger, lo: k} }

// OlderThan matches keys less than k.
func OlderThan(k uint64) Range { return Range{kind: rangeOlder, lo: k} }

// AtOrOlder matches keys less than or equal to k.
func AtOrOlder(k uint64) Range { return Range{kind: rangeAtOrOlder, lo: k} }

// Outside matches keys outside the inclusive range [lo, hi].
func Outside(lo, hi uint64) Range { return Range{kind: rangeOutside, lo: lo, hi: hi} }

// Contains reports whether r matches key.
func (r Range) Contains(key uint64) bool {
	switch r.kind {
	case rangeYounger:
		return key > r.lo
	case rangeAtOrYounger:
		return key >= r.lo
	case rangeOlder:
		return key < r.lo
	case rangeAtOrOlder:
		return key <= r.lo
	case rangeOutside:
		return key < r.lo || key > r.hi
	}
	return false
}

// String describes the keys r matches.
func (r Range) String() string {
	switch r.kind {
	case rangeYounger:
		return fmt.Sprintf("key > %d", r.lo)
	case rangeAtOrYounger:
		return fmt.Sprintf("key >= %d", r.lo)
	case rangeOlder:
		return fmt.Sprintf("key < %d", r.lo)
	case rangeAtOrOlder:
		return fmt.Sprintf("key <= %d", r.lo)
	case rangeOutside:
		return fmt.Sprintf("key outside [%d, %d]", r.lo, r.hi)
	}
	return "none"
}
