package cpupipeline

import "github.com/lanework/lanework/chronon"

// Decode buffers fetched instructions and dispatches them in order,
// round-robin over the ALUs, up to one per ALU per cycle.
//
// On a flush it squashes by key rather than with CancelInFlight: an ALU
// queue may still hold instructions older than the mispredicted branch.
type Decode struct {
	chronon.Base
	In                 chronon.InPort[Inst]     `chronon:"in"`
	Flush              chronon.InPort[Flush]    `chronon:"flush"`
	ALU                [4]chronon.OutPort[Inst] `chronon:"alu"`
	Dispatched, Stalls chronon.Counter

	buf  [16]Inst
	head int
	n    int
	rr   int
}

// NewDecode returns a decode unit.
func NewDecode() *Decode { return &Decode{} }

// Tick applies flushes, accepts instructions and dispatches.
func (d *Decode) Tick() {
	for {
		fl, ok := d.Flush.TryReceive()
		if !ok {
			break
		}
		d.In.FlushKeys(seqKey, chronon.YoungerThan(fl.Seq))
		for d.n > 0 && d.buf[(d.head+d.n-1)%len(d.buf)].Seq > fl.Seq {
			d.n--
		}
	}
	for d.n < len(d.buf) {
		in, ok := d.In.TryReceive()
		if !ok {
			break
		}
		d.buf[(d.head+d.n)%len(d.buf)] = in
		d.n++
	}
	for range d.ALU {
		if d.n == 0 {
			return
		}
		if !d.ALU[d.rr].Send(d.buf[d.head]) {
			d.Stalls.Inc()
			return
		}
		d.head = (d.head + 1) % len(d.buf)
		d.n--
		d.rr = (d.rr + 1) % len(d.ALU)
		d.Dispatched.Inc()
	}
}
