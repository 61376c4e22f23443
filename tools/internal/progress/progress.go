// Package progress draws progress on a terminal and nowhere else: a bar
// with percent and ETA where the total is known. Output that is a pipe or a
// file gets nothing, so logs and captured output stay clean.
package progress

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// IsTerminal reports whether w is a terminal. A writer may answer for
// itself with an IsTerminal method (tests use that); otherwise w must be a
// file descriptor that is a terminal.
func IsTerminal(w io.Writer) bool {
	if t, ok := w.(interface{ IsTerminal() bool }); ok {
		return t.IsTerminal()
	}
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// A Bar shows how far a run of known length has come. The zero Bar (and a
// nil *Bar) draws nothing.
type Bar struct {
	b *progressbar.ProgressBar
	w io.Writer
}

// New returns a bar of total steps on w, or a Bar that draws nothing when
// on is false or w is not a terminal. every is the shortest time between
// redraws.
func New(w io.Writer, on bool, total int64, desc string, every time.Duration) *Bar {
	if !on || !IsTerminal(w) || total <= 0 {
		return &Bar{}
	}
	return &Bar{w: w, b: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionThrottle(every),
		progressbar.OptionSetWidth(30),
		progressbar.OptionOnCompletion(func() { _, _ = io.WriteString(w, "\n") }),
	)}
}

// Set moves the bar to n of total steps, with desc beside it. An n past
// the total counts as the total.
func (b *Bar) Set(n int64, desc string) {
	if b == nil || b.b == nil {
		return
	}
	b.b.Describe(desc)
	// progressbar refuses a count past its max without drawing, yet
	// remembers 100% as drawn, so a later Finish would not draw either and
	// the line would stay at the last throttled redraw.
	_ = b.b.Set64(min(n, b.b.GetMax64()))
}

// Total is the bar's number of steps (0 for a bar that draws nothing).
func (b *Bar) Total() int64 {
	if b == nil || b.b == nil {
		return 0
	}
	return b.b.GetMax64()
}

// Done ends the bar's line: at 100% after a complete run, where it stands
// after an interrupted one.
func (b *Bar) Done(complete bool) {
	if b == nil || b.b == nil {
		return
	}
	if complete {
		_ = b.b.Finish()
		return
	}
	_ = b.b.Exit()
	_, _ = io.WriteString(b.w, "\n")
}
