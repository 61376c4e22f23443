package chronon

import (
	"cmp"
	"context"
	"log/slog"
	"path"
	"slices"
	"time"
)

// LogFilter selects the simulation log records that are written.
type LogFilter struct {
	// Units are path.Match patterns over full unit names ("core0.*",
	// "alu[[]2]" for a literal bracket); a unit matching any is logged.
	// Empty: every unit.
	Units []string
	// Categories are the categories logged; empty: every category.
	Categories []string
	// Level is the least level logged (slog.LevelInfo by default: zero).
	Level slog.Level
	// From and Until bound the cycles logged, inclusive; Until 0: no end.
	From, Until uint64
}

// WithLogger sends the simulation's log to l: the units' records
// (Base.Log) that f selects, and the engine's messages (such as why it
// runs sequentially). Without it nothing is logged; chronon never writes to
// slog.Default.
//
// Unit records carry the cycle, the unit and the category as attributes
// "cycle", "unit" and "category", and no time (they are simulated events).
// Each unit buffers its own records; between cycles, every 1,024 cycles and
// at Close or FlushLog, they are written ordered by cycle and then plan
// order, as the sequential engine makes them, so the log is identical for
// every engine and worker count.
func WithLogger(l *slog.Logger, f LogFilter) SimOption {
	return func(c *simConfig) { c.logger, c.logFilter = l, f }
}

// simLog is a simulation's unit log.
type simLog struct {
	h      slog.Handler
	f      LogFilter
	cats   map[string]bool
	next   uint64      // the next cycle to flush at
	on     []bool      // per unit index: selected by f.Units (set by Build)
	bufs   [][]logItem // per unit index, written only by the unit's Tick
	merged []logItem
}

type logItem struct {
	at    uint64
	unit  int
	level slog.Level
	cat   string
	msg   string
	args  []any
}

func newSimLog(l *slog.Logger, f LogFilter) *simLog {
	g := &simLog{h: l.Handler(), f: f, next: traceInterval}
	if len(f.Categories) > 0 {
		g.cats = make(map[string]bool)
		for _, c := range f.Categories {
			g.cats[c] = true
		}
	}
	return g
}

// prepare sizes the buffers and matches the unit patterns, at Build.
func (g *simLog) prepare(units []*unitState) {
	g.on = make([]bool, len(units))
	g.bufs = make([][]logItem, len(units))
	for i, u := range units {
		g.on[i] = len(g.f.Units) == 0
		for _, p := range g.f.Units {
			if ok, _ := path.Match(p, u.name); ok {
				g.on[i] = true
			}
		}
	}
}

// enabled reports whether a record of the unit at cycle c passes the filter.
func (g *simLog) enabled(u *unitState, level slog.Level, cat string) bool {
	c := u.cycle
	switch {
	case level < g.f.Level, c < g.f.From, g.f.Until != 0 && c > g.f.Until:
		return false
	case g.cats != nil && !g.cats[cat]:
		return false
	}
	return u.index < len(g.on) && g.on[u.index] && g.h.Enabled(context.Background(), level)
}

// LogEnabled reports whether a record of this level and category from the
// unit, now, would be logged: check it before preparing costly arguments
// (Log's variadic arguments are allocated at every call).
func (b *Base) LogEnabled(level slog.Level, category string) bool {
	g := b.u.sim.lg
	return g != nil && g.enabled(b.u, level, category)
}

// Log records msg at the unit's current cycle with a level, a category and
// slog-style key-value args, if the simulation has a logger whose filter
// selects it.
func (b *Base) Log(level slog.Level, category, msg string, args ...any) {
	g := b.u.sim.lg
	if g == nil || !g.enabled(b.u, level, category) {
		return
	}
	i := b.u.index
	g.bufs[i] = append(g.bufs[i], logItem{at: b.u.cycle, unit: i, level: level, cat: category, msg: msg, args: args})
}

// flush writes the buffered records: those of the cycles before the one
// about to run, by cycle and then plan order.
func (g *simLog) flush(s *Simulation) {
	g.merged = g.merged[:0]
	for _, u := range s.order {
		if u.index < len(g.bufs) {
			g.merged = append(g.merged, g.bufs[u.index]...)
			clear(g.bufs[u.index])
			g.bufs[u.index] = g.bufs[u.index][:0]
		}
	}
	slices.SortStableFunc(g.merged, func(a, b logItem) int { return cmp.Compare(a.at, b.at) })
	ctx := context.Background()
	for i := range g.merged {
		e := &g.merged[i]
		r := slog.NewRecord(time.Time{}, e.level, e.msg, 0)
		r.AddAttrs(slog.Uint64("cycle", e.at), slog.String("unit", s.units[e.unit].name), slog.String("category", e.cat))
		r.Add(e.args...)
		_ = g.h.Handle(ctx, r) // a handler's write error is the handler's to report
	}
	clear(g.merged)
}

// cut drops the buffered records of cycle c from units after plan
// position pos (see Close).
func (g *simLog) cut(s *Simulation, c uint64, pos int) {
	for i, u := range s.order {
		from := c + 1 // the lookahead engine may have run units before the panicking one past its cycle
		if i > pos {
			from = c
		}
		if u.index < len(g.bufs) {
			g.bufs[u.index] = slices.DeleteFunc(g.bufs[u.index], func(e logItem) bool { return e.at >= from })
		}
	}
}

// FlushLog writes the units' buffered log records now, between runs.
func (s *Simulation) FlushLog() {
	if s.lg != nil {
		s.lg.flush(s)
	}
}

// info logs an engine message to the WithLogger logger, if any.
func (s *Simulation) info(msg string, args ...any) {
	if l := s.cfg.logger; l != nil {
		l.Info(msg, args...)
	}
}
