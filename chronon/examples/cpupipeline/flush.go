package cpupipeline

import (
	"log/slog"

	"github.com/lanework/lanework/chronon"
)

// FlushEngine turns mispredicts into flushes. Among the mispredicts ready in
// a cycle it flushes for the oldest branch still on the correct path,
// ignoring branches that an earlier flush already squashed.
type FlushEngine struct {
	chronon.Base
	In               chronon.InPort[Inst]   `chronon:"in"`
	Out              chronon.OutPort[Flush] `chronon:"out"`
	Flushes, Ignored chronon.Counter

	gen  uint32
	hist [64]uint64 // Seq of flush g at g%64
}

// valid reports whether a branch fetched after flush gen is still on the
// correct path: no later flush squashed it.
func (f *FlushEngine) valid(seq uint64, gen uint32) bool {
	if f.gen-gen >= uint32(len(f.hist)) {
		return false
	}
	for g := gen + 1; g <= f.gen; g++ {
		if seq > f.hist[g%uint32(len(f.hist))] {
			return false
		}
	}
	return true
}

// NewFlushEngine returns a flush engine.
func NewFlushEngine() *FlushEngine { return &FlushEngine{} }

// Tick issues at most one flush.
func (f *FlushEngine) Tick() {
	best, found := uint64(0), false
	for {
		in, ok := f.In.TryReceive()
		if !ok {
			break
		}
		if !f.valid(in.Seq, in.Gen) {
			f.Ignored.Inc()
			continue
		}
		if !found || in.Seq < best {
			best, found = in.Seq, true
		}
	}
	if !found {
		return
	}
	f.gen++
	f.hist[f.gen%uint32(len(f.hist))] = best
	f.Out.Send(Flush{Seq: best, Gen: f.gen})
	f.Flushes.Inc()
	f.Event("flush")
	if f.LogEnabled(slog.LevelInfo, "flush") { // Log's arguments allocate
		f.Log(slog.LevelInfo, "flush", "redirect", "seq", best, "gen", f.gen)
	}
}
