package cpupipeline

import (
	"fmt"

	"github.com/lanework/lanework/chronon"
)

// WritebackParams configures Writeback.
type WritebackParams struct {
	CommitTarget uint64 `yaml:"commit_target"` // terminate after this many commits; 0 never
	Width        int    `yaml:"width"`         // commits per cycle; default 4
}

// Writeback holds results in a reorder buffer and commits them in order. It
// stops committing after a mispredicted branch until the flush arrives.
type Writeback struct {
	chronon.Base
	In                  chronon.InPort[Inst]    `chronon:"in"`
	Flush               chronon.InPort[Flush]   `chronon:"flush"`
	Retire              chronon.OutPort[uint64] `chronon:"retire"` // the commit pointer, to fetch
	Committed, Squashed chronon.Counter

	p        WritebackParams
	rob      [256]Inst
	full     [256]bool
	next     uint64 // next Seq to commit
	sent     uint64 // last commit pointer sent
	waiting  bool   // committed a mispredicted branch; wait for its flush
	waitSeq  uint64
	seen     [16]uint64 // recent flushes, by Seq
	nseen    int
	flushes  uint64
	digest   uint64
	finished bool
}

// NewWriteback returns a writeback unit.
func NewWriteback(p WritebackParams) *Writeback {
	if p.Width <= 0 {
		p.Width = 4
	}
	w := &Writeback{p: p, digest: 0xcbf29ce484222325}
	for i := range w.seen {
		w.seen[i] = none
	}
	return w
}

// Tick applies flushes, collects results and commits.
func (w *Writeback) Tick() {
	for {
		fl, ok := w.Flush.TryReceive()
		if !ok {
			break
		}
		w.Squashed.Add(uint64(w.In.FlushKeys(seqKey, chronon.YoungerThan(fl.Seq))))
		for i := range w.rob {
			if w.full[i] && w.rob[i].Seq > fl.Seq {
				w.full[i] = false
				w.Squashed.Inc()
			}
		}
		w.flushes++
		if w.waiting && fl.Seq == w.waitSeq {
			w.waiting = false
			continue
		}
		// The flush arrived before its branch commits. Flushes recorded for
		// younger branches are void: those branches were squashed.
		for i := range w.seen {
			if w.seen[i] > fl.Seq {
				w.seen[i] = none
			}
		}
		w.seen[w.nseen%len(w.seen)] = fl.Seq
		w.nseen++
	}
	for {
		in, ok := w.In.TryReceive()
		if !ok {
			break
		}
		i := in.Seq % uint64(len(w.rob))
		w.rob[i], w.full[i] = in, true
	}
	for range w.p.Width {
		i := w.next % uint64(len(w.rob))
		if w.finished || w.waiting || !w.full[i] || w.rob[i].Seq != w.next {
			break
		}
		in := w.rob[i]
		w.full[i] = false
		w.digest = (w.digest ^ in.Seq ^ in.Val<<1) * 0x100000001b3
		w.next++
		w.Committed.Inc()
		if in.Mispredict && !w.arrived(in.Seq) {
			w.waiting, w.waitSeq = true, in.Seq
		}
		if w.p.CommitTarget != 0 && w.next >= w.p.CommitTarget && !w.finished {
			w.finished = true
			w.Terminate("commit-target", 0, w.Report())
		}
	}
	if w.next != w.sent && w.Retire.Send(w.next) {
		w.sent = w.next
	}
}

const none = ^uint64(0)

// arrived reports whether the flush for the branch seq has already arrived.
func (w *Writeback) arrived(seq uint64) bool {
	for i := range w.seen {
		if w.seen[i] == seq {
			w.seen[i] = none
			return true
		}
	}
	return false
}

// Digest returns the hash of every committed (Seq, Val) pair, in order.
func (w *Writeback) Digest() uint64 { return w.digest }

// Commits returns the number of committed instructions.
func (w *Writeback) Commits() uint64 { return w.next }

// Report summarizes the run.
func (w *Writeback) Report() string {
	return fmt.Sprintf("committed %d instructions by cycle %d, %d flushes, digest %016x", w.next, w.Cycle(), w.flushes, w.digest)
}
