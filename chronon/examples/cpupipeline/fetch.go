package cpupipeline

import "github.com/lanework/lanework/chronon"

// FetchParams configures Fetch.
type FetchParams struct {
	Width     int     `yaml:"width"`      // instructions per cycle; default 4
	Budget    uint64  `yaml:"budget"`     // instructions to fetch, wrong paths included; 0 is unlimited
	FlushProb float64 `yaml:"flush_prob"` // probability that an instruction is a surprising branch; default 0.001
	Seed      uint64  `yaml:"seed"`
	Window    uint64  `yaml:"window"` // reorder-buffer entries; default 64
}

// Fetch produces the synthetic instruction stream. One in eight
// instructions is a branch whose usual direction a 2-bit-counter predictor
// learns; a surprise (with probability FlushProb per instruction) reverses
// it and causes a mispredict.
type Fetch struct {
	chronon.Base
	Out                        chronon.OutPort[Inst]  `chronon:"out"`
	Flush                      chronon.InPort[Flush]  `chronon:"flush"`
	Commit                     chronon.InPort[uint64] `chronon:"commit"` // writeback's commit pointer
	Fetched, Stalls, Redirects chronon.Counter

	p         FetchParams
	seq       uint64
	gen       uint32
	committed uint64
	count     uint64
	surprise  uint64 // threshold on 20 hash bits
	bp        [1024]uint8
}

// NewFetch returns a fetch unit.
func NewFetch(p FetchParams) *Fetch {
	if p.Width <= 0 {
		p.Width = 4
	}
	if p.FlushProb == 0 {
		p.FlushProb = 0.001
	}
	if p.Window == 0 {
		p.Window = 64
	}
	// A surprise is a branch (1 in 8) whose hash falls below the threshold.
	return &Fetch{p: p, surprise: uint64(p.FlushProb * 8 * (1 << 20))}
}

// Tick redirects on a flush, then fetches up to Width instructions.
func (f *Fetch) Tick() {
	for {
		fl, ok := f.Flush.TryReceive()
		if !ok {
			break
		}
		f.seq, f.gen = fl.Seq+1, fl.Gen
		// Decode took the branch, so everything still on the wire to it
		// is younger: cancel it wholesale.
		f.Out.CancelInFlight()
		f.Redirects.Inc()
	}
	for {
		c, ok := f.Commit.TryReceive()
		if !ok {
			break
		}
		f.committed = c
	}
	for range f.p.Width {
		if f.p.Budget != 0 && f.count >= f.p.Budget {
			return
		}
		if f.seq-f.committed >= f.p.Window {
			f.Stalls.Inc()
			return
		}
		in := f.inst(f.seq)
		if !f.Out.Send(in) {
			f.Stalls.Inc()
			return
		}
		f.seq++
		f.count++
		f.Fetched.Inc()
	}
}

func (f *Fetch) inst(seq uint64) Inst {
	h := mix(seq ^ f.p.Seed)
	in := Inst{Seq: seq, PC: uint32(h>>40) & 1023, Gen: f.gen}
	switch h & 7 {
	case 0:
		in.Op = OpBranch
		usual := mix(uint64(in.PC)^f.p.Seed)&1 == 1
		taken := usual != ((h>>8)&(1<<20-1) < f.surprise)
		ctr := &f.bp[in.PC]
		in.Mispredict = (*ctr >= 2) != taken
		if taken && *ctr < 3 {
			*ctr++
		} else if !taken && *ctr > 0 {
			*ctr--
		}
	case 1:
		in.Op = OpLoad
	}
	return in
}

// Done reports whether the budget is spent.
func (f *Fetch) Done() bool { return f.p.Budget != 0 && f.count >= f.p.Budget }
