package cpupipeline

import "github.com/lanework/lanework/chronon"

// ALU executes one instruction at a time: arithmetic and branches in one
// cycle, loads by a round trip to the L2. It reports mispredicted branches
// to the flush engine.
type ALU struct {
	chronon.Base
	In                      chronon.InPort[Inst]    `chronon:"in"`
	Flush                   chronon.InPort[Flush]   `chronon:"flush"`
	Result                  chronon.OutPort[Inst]   `chronon:"result"`
	Mem                     chronon.OutPort[MemReq] `chronon:"mem"`
	MemResp                 chronon.InPort[MemReq]  `chronon:"mem_resp"`
	Mispredict              chronon.OutPort[Inst]   `chronon:"mispredict"`
	Executed, Loads, Stalls chronon.Counter

	id       uint8
	cur      chronon.StageRegister[Inst] // the instruction executing
	waiting  bool                        // cur is a load waiting for the L2
	sentReq  bool
	flushSeq uint64 // the Seq of the flush being applied, for youngerFn
	keepFn   func(*MemReq) bool
	younger  func(*Inst) bool
}

// NewALU returns ALU number id (its index in the L2's response ports).
func NewALU(id int) *ALU {
	a := &ALU{id: uint8(id)}
	a.keepFn = a.ownResponse
	a.younger = func(in *Inst) bool { return in.Seq > a.flushSeq }
	return a
}

func (a *ALU) ownResponse(r *MemReq) bool { return a.waiting && r.Seq == a.cur.Value().Seq }

// Tick applies flushes, completes the current instruction, then starts the
// next.
func (a *ALU) Tick() {
	for {
		fl, ok := a.Flush.TryReceive()
		if !ok {
			break
		}
		a.In.FlushKeys(seqKey, chronon.YoungerThan(fl.Seq))
		if a.flushSeq = fl.Seq; a.cur.Flush(a.younger) {
			a.waiting, a.sentReq = false, false
		}
	}
	cur := a.cur.Value()
	if cur != nil && a.waiting {
		if !a.sentReq {
			a.sentReq = a.Mem.Send(MemReq{Seq: cur.Seq, Addr: mix(cur.Seq) & 0xffff, ALU: a.id})
			a.Stalls.Inc()
			return
		}
		r, ok := a.MemResp.ReceiveFiltered(a.keepFn) // stale responses are dropped
		if !ok {
			a.Stalls.Inc()
			return
		}
		cur.Val = r.Addr ^ cur.Seq
		a.waiting = false
	}
	if cur != nil {
		if !a.Result.Send(*cur) {
			a.Stalls.Inc()
			return
		}
		a.cur.Clear()
		a.Executed.Inc()
	}
	in, ok := a.In.TryReceive()
	if !ok {
		return
	}
	a.cur.Load(in)
	switch in.Op {
	case OpLoad:
		a.waiting = true
		a.sentReq = a.Mem.Send(MemReq{Seq: in.Seq, Addr: mix(in.Seq) & 0xffff, ALU: a.id})
		a.Loads.Inc()
		return
	case OpBranch:
		if in.Mispredict {
			a.Mispredict.Send(in) // rate and capacity suffice: one branch per cycle per ALU
		}
	}
	cur = a.cur.Value()
	cur.Val = mix(in.Seq + 1)
	if a.Result.Send(*cur) {
		a.cur.Clear()
		a.Executed.Inc()
	}
}
