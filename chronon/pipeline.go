package chronon

import "fmt"

// Pipeline is a chain of StageRegisters, stage 0 first: Push latches into
// stage 0, Step advances every value whose next stage is free (or frees
// itself in the same step), and the last stage is the output, read with
// Out and emptied with Out().Take. A value that cannot move stalls, and so
// does everything behind it: stages never overtake. Flush empties the
// stages whose values match. Plain unit state; nothing allocates after
// NewPipeline.
type Pipeline[T any] struct {
	regs []StageRegister[T]
}

// NewPipeline returns a pipeline of n stages; n must be at least 1.
func NewPipeline[T any](n int) (*Pipeline[T], error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: a pipeline has at least 1 stage, not %d", ErrTopology, n)
	}
	return &Pipeline[T]{regs: make([]StageRegister[T], n)}, nil
}

// Len returns the number of stages.
func (p *Pipeline[T]) Len() int { return len(p.regs) }

// Stage returns stage i.
func (p *Pipeline[T]) Stage(i int) *StageRegister[T] { return &p.regs[i] }

// Out returns the last stage.
func (p *Pipeline[T]) Out() *StageRegister[T] { return &p.regs[len(p.regs)-1] }

// Push latches v into stage 0 and reports whether it was free.
func (p *Pipeline[T]) Push(v T) bool { return p.regs[0].Load(v) }

// Step moves each value one stage on where the next stage is empty,
// from the output backwards, so a full pipeline behind an emptied output
// advances as a whole. It returns how many values moved.
func (p *Pipeline[T]) Step() int {
	n := 0
	for i := len(p.regs) - 2; i >= 0; i-- {
		if p.regs[i].valid && !p.regs[i+1].valid {
			p.regs[i+1].v, p.regs[i+1].valid = p.regs[i].v, true
			p.regs[i].Clear()
			n++
		}
	}
	return n
}

// Flush empties every stage holding a value for which drop returns true
// and returns how many it emptied.
func (p *Pipeline[T]) Flush(drop func(*T) bool) int {
	n := 0
	for i := range p.regs {
		if p.regs[i].Flush(drop) {
			n++
		}
	}
	return n
}

// Occupied returns the number of stages holding a value.
func (p *Pipeline[T]) Occupied() int {
	n := 0
	for i := range p.regs {
		if p.regs[i].valid {
			n++
		}
	}
	return n
}
