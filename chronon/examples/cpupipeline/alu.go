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

	id      uint8
	cur     Inst
	busy    bool // cur holds an instruction
	waiting bool // cur is a load waiting for the L2
	sentReq bool
	keepFn  func(*MemReq) bool
}

// NewALU returns ALU number id (its index in the L2's response ports).
func NewALU(id int) *ALU {
	a := &ALU{id: uint8(id)}
	a.keepFn = a.ownResponse
	return a
}

func (a *ALU) ownResponse(r *MemReq) bool { return a.waiting && r.Seq == a.cur.Seq }

// Tick applies flushes, completes the current instruction, then starts the
// next.
func (a *ALU) Tick() {
	for {
		fl, ok := a.Flush.TryReceive()
		if !ok {
			break
		}
		a.In.FlushKeys(seqKey, chronon.YoungerThan(fl.Seq))
		if a.busy && a.cur.Seq > fl.Seq {
			a.busy, a.waiting, a.sentReq = false, false, false
		}
	}
	if a.busy && a.waiting {
		if !a.sentReq {
			a.sentReq = a.Mem.Send(MemReq{Seq: a.cur.Seq, Addr: mix(a.cur.Seq) & 0xffff, ALU: a.id})
			a.Stalls.Inc()
			return
		}
		r, ok := a.MemResp.ReceiveFiltered(a.keepFn) // stale responses are dropped
		if !ok {
			a.Stalls.Inc()
			return
		}
		a.cur.Val = r.Addr ^ a.cur.Seq
		a.waiting = false
	}
	if a.busy {
		if !a.Result.Send(a.cur) {
			a.Stalls.Inc()
			return
		}
		a.busy = false
		a.Executed.Inc()
	}
	in, ok := a.In.TryReceive()
	if !ok {
		return
	}
	a.cur, a.busy = in, true
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
	a.cur.Val = mix(in.Seq + 1)
	if a.Result.Send(a.cur) {
		a.busy = false
		a.Executed.Inc()
	}
}
