package chronon

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"
)

// tracer collects trace events in memory until Close writes them.
type tracer struct {
	w      io.Writer
	events []traceEvent
}

type traceEvent struct {
	name  string
	unit  int
	ts    uint64
	dur   uint64
	phase byte // 'i' instant, 'X' complete span
}

// TraceTo records the units' events and spans and writes them to w, on
// Close, as Chrome trace-event JSON (open it in the Perfetto UI or
// chrome://tracing). Each unit is a thread; one simulated cycle is shown as
// one microsecond. Call it before running.
func (s *Simulation) TraceTo(w io.Writer) {
	s.obs.tr = &tracer{w: w}
}

// Event records an instant event named name at the unit's current cycle. It
// does nothing unless the simulation is tracing.
func (b *Base) Event(name string) {
	if t := b.u.sim.obs.tr; t != nil {
		t.events = append(t.events, traceEvent{name: name, unit: b.u.index, ts: b.u.cycle, phase: 'i'})
	}
}

// Span records a span named name from cycle start to the end of the unit's
// current cycle. It does nothing unless the simulation is tracing.
func (b *Base) Span(name string, start uint64) {
	if t := b.u.sim.obs.tr; t != nil {
		end := b.u.cycle + 1
		t.events = append(t.events, traceEvent{name: name, unit: b.u.index, ts: start, dur: end - min(start, end), phase: 'X'})
	}
}

// Tracing reports whether events are being recorded, so a unit can skip
// preparing an expensive event name.
func (b *Base) Tracing() bool { return b.u.sim.obs.tr != nil }

func (t *tracer) write(s *Simulation) error {
	w := bufio.NewWriter(t.w)
	w.WriteString(`{"traceEvents":[`)
	sep := ""
	for _, u := range s.units {
		name, _ := json.Marshal(u.name)
		w.WriteString(sep + `{"ph":"M","name":"thread_name","pid":1,"tid":` + strconv.Itoa(u.index) + `,"args":{"name":`)
		w.Write(name)
		w.WriteString("}}")
		sep = ",\n"
	}
	for _, e := range t.events {
		name, _ := json.Marshal(e.name)
		w.WriteString(sep + `{"ph":"` + string(e.phase) + `","name":`)
		w.Write(name)
		w.WriteString(`,"pid":1,"tid":` + strconv.Itoa(e.unit) + `,"ts":` + strconv.FormatUint(e.ts, 10))
		if e.phase == 'X' {
			w.WriteString(`,"dur":` + strconv.FormatUint(e.dur, 10))
		} else {
			w.WriteString(`,"s":"t"`)
		}
		w.WriteString("}")
		sep = ",\n"
	}
	w.WriteString("]}\n")
	return w.Flush()
}
