package chronon

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// observer holds the optional counter dump and trace. Both are off unless
// configured; off, the engines pay one comparison per cycle.
//
// Both engines observe at the same points: between cycles, when the next
// cycle to run is next. The sequential engine does it at the end of step,
// the parallel engine in engine.open, which runs on one goroutine while no
// cluster runs (after every cluster's done.Add of the cycle before). So the
// counters read, and the per-unit trace buffers merged, are those of
// exactly the cycles before next, whichever engine or worker ran them; the
// files are byte-identical across engines and worker counts.
type observer struct {
	next uint64 // the next cycle to observe at: the sooner of ctr.next and tr.next; none when off

	ctr *counterDump
	tr  *tracer
	lg  *simLog
}

// counterDump writes counter intervals as CSV.
type counterDump struct {
	w     *csv.Writer
	every uint64
	next  uint64 // end of the current interval (exclusive)
	from  uint64 // start of the current interval
	head  bool
	ctrs  []*Counter
	last  []uint64
	delta []float64 // the interval's increases, for derived counters
	row   []string
}

// DumpCounters writes the units' counters to w as CSV every `every` cycles,
// one row per interval: the interval's first and last cycle and, per
// counter (column "unit.counter"), its increase over the interval. Close
// writes the last, partial, interval. Call it before running.
func (s *Simulation) DumpCounters(w io.Writer, every uint64) error {
	if every == 0 {
		return fmt.Errorf("chronon: counter interval must be positive")
	}
	s.obs.ctr = &counterDump{w: csv.NewWriter(w), every: every, next: s.cycle + every, from: s.cycle}
	s.obs.schedule()
	return nil
}

// schedule sets next from the two observers.
func (o *observer) schedule() {
	o.next = none
	if o.ctr != nil {
		o.next = o.ctr.next
	}
	if o.tr != nil {
		o.next = min(o.next, o.tr.next)
	}
	if o.lg != nil {
		o.next = min(o.next, o.lg.next)
	}
}

// observe runs the observers due at cycle c: every cycle before c has run,
// none after.
func (o *observer) observe(s *Simulation, c uint64) {
	if d := o.ctr; d != nil && d.next == c {
		d.dump(s, c)
		d.next = c + d.every
	}
	if t := o.tr; t != nil && t.next == c {
		t.flush(s)
		t.next = c + traceInterval
	}
	if g := o.lg; g != nil && g.next == c {
		g.flush(s)
		g.next = c + traceInterval
	}
	o.schedule()
}

// header writes the CSV header row and sizes the per-counter state, once.
func (d *counterDump) header(s *Simulation) {
	if d.head {
		return
	}
	d.head = true
	d.row = append(d.row[:0], "from_cycle", "to_cycle")
	for _, u := range s.units {
		for _, k := range u.ctrs {
			d.row = append(d.row, u.name+"."+k.name)
			d.ctrs = append(d.ctrs, k.c)
		}
	}
	for _, x := range s.derived {
		d.row = append(d.row, x.name)
	}
	_ = d.w.Write(d.row) // an error sticks in the writer; Close reports it
	d.last = make([]uint64, len(d.ctrs))
	d.delta = make([]float64, len(d.ctrs))
}

// dump writes the interval [d.from, c), which must not be empty.
func (d *counterDump) dump(s *Simulation, c uint64) {
	d.header(s)
	d.row = append(d.row[:0], strconv.FormatUint(d.from, 10), strconv.FormatUint(c-1, 10))
	for i, k := range d.ctrs {
		d.row = append(d.row, strconv.FormatUint(k.n-d.last[i], 10))
		d.delta[i] = float64(k.n - d.last[i])
		d.last[i] = k.n
	}
	for _, x := range s.derived {
		d.row = append(d.row, formatDerived(x.root.eval(d.delta, float64(c-d.from))))
	}
	_ = d.w.Write(d.row)
	d.from = c
}

// Close ends the simulation: it calls the units' Finish hooks, writes the
// last counter interval and the rest of the trace, and returns the first
// error.
//
// After a panic, the state of the panic's cycle differs between engines
// (the parallel engine may have ticked units that come after the panicking
// one in plan order; the sequential engine never does), so Close writes no
// counter row for the unfinished cycle and no trace event of it from a unit
// after the panicking one: the files stay identical across engines.
func (s *Simulation) Close() (err error) {
	defer s.recoverUnit(&err)
	var first error
	for _, u := range s.order {
		if f, ok := u.unit.(Finisher); ok {
			s.cur = u.pos + 1
			if err := f.Finish(); err != nil && first == nil {
				first = fmt.Errorf("chronon: finish %s: %w", u.name, err)
			}
		}
	}
	s.cur = 0
	var ue *UnitError
	panicked := errors.As(s.fault, &ue)
	o := &s.obs
	if d := o.ctr; d != nil {
		if !panicked && s.cycle > d.from {
			d.dump(s, s.cycle)
		}
		d.header(s) // a run closed before its first cycle still gets one
		d.w.Flush()
		if err := d.w.Error(); err != nil && first == nil {
			first = fmt.Errorf("chronon: counters: %w", err)
		}
		o.ctr = nil
	}
	if t := o.tr; t != nil {
		if panicked {
			if u, ok := s.byName[ue.Unit]; ok {
				t.cut(s, ue.Cycle, u.pos)
			}
		}
		t.flush(s)
		if err := t.close(); err != nil && first == nil {
			first = fmt.Errorf("chronon: trace: %w", err)
		}
		o.tr = nil
	}
	if g := s.lg; g != nil {
		if panicked {
			if u, ok := s.byName[ue.Unit]; ok {
				g.cut(s, ue.Cycle, u.pos)
			}
		}
		g.flush(s)
	}
	o.schedule()
	return first
}
