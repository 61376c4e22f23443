package chronon

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// observer holds the optional counter dump and trace. Both are off unless
// configured; off, the engine pays one comparison per cycle.
type observer struct {
	next  uint64 // cycle at which to dump counters next; none when off
	every uint64
	w     *bufio.Writer
	ctrs  []*Counter
	last  []uint64
	head  bool
	from  uint64 // start of the current interval

	tr *tracer
}

// DumpCounters writes the units' counters to w as CSV every `every` cycles,
// one row per interval: the interval's first and last cycle and, per
// counter (column "unit.counter"), its increase over the interval. Close
// writes the last, partial, interval. Call it before running.
func (s *Simulation) DumpCounters(w io.Writer, every uint64) error {
	if every == 0 {
		return fmt.Errorf("chronon: counter interval must be positive")
	}
	o := &s.obs
	o.w, o.every, o.next, o.head = bufio.NewWriter(w), every, s.cycle+every, false
	o.from = s.cycle
	return nil
}

func (o *observer) dump(s *Simulation) {
	o.next = s.cycle + o.every
	if !o.head {
		o.head = true
		o.w.WriteString("from_cycle,to_cycle")
		for _, u := range s.units {
			for _, c := range u.ctrs {
				o.w.WriteString("," + u.name + "." + c.name)
				o.ctrs = append(o.ctrs, c.c)
			}
		}
		o.w.WriteByte('\n')
		o.last = make([]uint64, len(o.ctrs))
	}
	var b [24]byte
	o.w.Write(strconv.AppendUint(b[:0], o.from, 10))
	o.w.WriteByte(',')
	o.w.Write(strconv.AppendUint(b[:0], s.cycle-1, 10))
	for i, c := range o.ctrs {
		v := c.n
		o.w.WriteByte(',')
		o.w.Write(strconv.AppendUint(b[:0], v-o.last[i], 10))
		o.last[i] = v
	}
	o.w.WriteByte('\n')
	o.from = s.cycle
}

// Close ends the simulation: it calls the units' Finish hooks, writes the
// last counter interval and the trace, and returns the first error.
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
	o := &s.obs
	if o.w != nil {
		if s.cycle > o.from || !o.head {
			o.dump(s)
		}
		if err := o.w.Flush(); err != nil && first == nil {
			first = fmt.Errorf("chronon: counters: %w", err)
		}
		o.w, o.next = nil, none
	}
	if o.tr != nil {
		if err := o.tr.write(s); err != nil && first == nil {
			first = fmt.Errorf("chronon: trace: %w", err)
		}
		o.tr = nil
	}
	return first
}
