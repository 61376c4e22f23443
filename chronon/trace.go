package chronon

import (
	"bufio"
	"cmp"
	"encoding/json"
	"io"
	"slices"
)

// traceInterval is how many cycles of events the units buffer before the
// trace merges and writes them.
const traceInterval = 1024

// tracer streams trace events as Chrome trace-event JSON.
//
// Each unit appends its events to its own buffer (unitState.events), so
// units on different workers never share one. Every traceInterval cycles,
// between cycles (see observer), the tracer merges the buffers in the order
// the sequential engine produces events: by the cycle they were recorded
// in, then by plan order (the buffers are concatenated in plan order and
// sorted stably, which keeps each unit's own order), and writes them.
type tracer struct {
	w     *bufio.Writer
	next  uint64 // the next cycle to flush at
	head  bool
	err   error
	merge []traceEvent
}

type traceEvent struct {
	at    uint64 // the cycle the event was recorded in
	unit  int    // the unit's index: its thread
	name  string
	ts    uint64
	dur   uint64
	phase byte // 'i' instant, 'X' complete span
}

// traceRecord is one JSON trace event.
type traceRecord struct {
	Ph   string      `json:"ph"`
	Name string      `json:"name"`
	Pid  int         `json:"pid"`
	Tid  int         `json:"tid"`
	Ts   uint64      `json:"ts"`
	Dur  uint64      `json:"dur,omitempty"`
	S    string      `json:"s,omitempty"`
	Args *traceNamed `json:"args,omitempty"`
}

type traceNamed struct {
	Name string `json:"name"`
}

// TraceTo records the units' events and spans and writes them to w as
// Chrome trace-event JSON (open it in the Perfetto UI or chrome://tracing):
// the process is named "chronon", each unit is a thread named after it,
// and one simulated cycle is shown as one microsecond. Events are written
// as the run goes, every 1,024 cycles; Close completes the file. Call it
// before running.
func (s *Simulation) TraceTo(w io.Writer) {
	s.obs.tr = &tracer{w: bufio.NewWriter(w), next: s.cycle + traceInterval}
	s.obs.schedule()
}

// Event records an instant event named name at the unit's current cycle. It
// does nothing unless the simulation is tracing.
func (b *Base) Event(name string) {
	if b.u.sim.obs.tr != nil {
		c := b.u.cycle
		b.u.events = append(b.u.events, traceEvent{at: c, unit: b.u.index, name: name, ts: c, phase: 'i'})
	}
}

// Span records a span named name from cycle start to the end of the unit's
// current cycle. It does nothing unless the simulation is tracing.
func (b *Base) Span(name string, start uint64) {
	if b.u.sim.obs.tr != nil {
		c := b.u.cycle
		end := c + 1
		b.u.events = append(b.u.events, traceEvent{at: c, unit: b.u.index, name: name, ts: start, dur: end - min(start, end), phase: 'X'})
	}
}

// Tracing reports whether events are being recorded, so a unit can skip
// preparing an expensive event name.
func (b *Base) Tracing() bool { return b.u.sim.obs.tr != nil }

// record writes one event, after the header on the first.
func (t *tracer) record(r *traceRecord) {
	if t.err != nil {
		return
	}
	sep := ",\n"
	if !t.head {
		t.head = true
		sep = `{"traceEvents":[` + "\n"
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.err = err
		return
	}
	t.w.WriteString(sep)
	t.w.Write(b)
}

// names writes the process and thread names.
func (t *tracer) names(s *Simulation) {
	t.record(&traceRecord{Ph: "M", Name: "process_name", Pid: 1, Args: &traceNamed{"chronon"}})
	for _, u := range s.units {
		t.record(&traceRecord{Ph: "M", Name: "thread_name", Pid: 1, Tid: u.index, Args: &traceNamed{u.name}})
	}
}

// flush merges and writes the buffered events: those of the cycles before
// the one about to run.
func (t *tracer) flush(s *Simulation) {
	if !t.head {
		t.names(s)
	}
	t.merge = t.merge[:0]
	for _, u := range s.order {
		t.merge = append(t.merge, u.events...)
		clear(u.events)
		u.events = u.events[:0]
	}
	slices.SortStableFunc(t.merge, func(a, b traceEvent) int { return cmp.Compare(a.at, b.at) })
	var r traceRecord
	for i := range t.merge {
		e := &t.merge[i]
		r = traceRecord{Ph: string(e.phase), Name: e.name, Pid: 1, Tid: e.unit, Ts: e.ts}
		if e.phase == 'X' {
			r.Dur = e.dur
		} else {
			r.S = "t"
		}
		t.record(&r)
	}
	clear(t.merge)
	if t.err == nil {
		t.err = t.w.Flush()
	}
}

// cut drops the buffered events of cycle c from units after plan position
// pos, and of later cycles from every unit (see Close).
func (t *tracer) cut(s *Simulation, c uint64, pos int) {
	for i, u := range s.order {
		from := c + 1 // the lookahead engine may have run units before the panicking one past its cycle
		if i > pos {
			from = c
		}
		u.events = slices.DeleteFunc(u.events, func(e traceEvent) bool { return e.at >= from })
	}
}

// close ends the JSON document and flushes it.
func (t *tracer) close() error {
	if t.err != nil {
		return t.err
	}
	if !t.head {
		t.w.WriteString(`{"traceEvents":[`)
	}
	t.w.WriteString("\n]}\n")
	return t.w.Flush()
}
