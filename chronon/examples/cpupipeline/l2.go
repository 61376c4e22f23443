package cpupipeline

import "github.com/lanework/lanework/chronon"

// L2 answers every load it receives; its latency is the delay registered on
// its response connections.
type L2 struct {
	chronon.Base
	Req              chronon.InPort[MemReq]     `chronon:"req"`
	Resp             [4]chronon.OutPort[MemReq] `chronon:"resp"`
	Requests, Stalls chronon.Counter

	pending chronon.StageRegister[MemReq] // a request whose response port refused it
}

// NewL2 returns an L2 unit.
func NewL2() *L2 { return &L2{} }

// Tick answers the ready requests in (arrive, connection) order.
func (l *L2) Tick() {
	for {
		if !l.pending.Valid() {
			r, ok := l.Req.TryReceive()
			if !ok {
				return
			}
			l.pending.Load(r)
		}
		r := *l.pending.Value()
		r.Addr = mix(r.Addr) // the "data"
		if !l.Resp[r.ALU%4].Send(r) {
			l.Stalls.Inc()
			return
		}
		l.pending.Clear()
		l.Requests.Inc()
	}
}
