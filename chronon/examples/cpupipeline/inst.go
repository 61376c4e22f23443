package cpupipeline

// Op is an instruction class.
type Op uint8

// Instruction classes.
const (
	OpALU Op = iota
	OpLoad
	OpBranch
)

// Inst is an instruction in flight. Seq numbers the correct path densely:
// after a flush, fetch reuses the numbers following the mispredicted branch.
type Inst struct {
	Seq        uint64
	Val        uint64 // the result, once executed
	PC         uint32
	Gen        uint32 // flushes fetch had seen when it fetched the instruction
	Op         Op
	Mispredict bool // a branch whose prediction was wrong
}

// Flush redirects the pipeline: every instruction younger than Seq is on a
// wrong path.
type Flush struct {
	Seq uint64
	Gen uint32 // numbers flushes from 1
}

// MemReq is a load sent to the L2 by an ALU.
type MemReq struct {
	Seq  uint64
	Addr uint64
	ALU  uint8
}

// mix is a 64-bit finalizer (a bijective hash): the synthetic program.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// seqKey is the flush key of an instruction.
func seqKey(v *Inst) uint64 { return v.Seq }
