package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type tty struct{ bytes.Buffer }

func (*tty) IsTerminal() bool { return true }

func TestBarOnTerminalOnly(t *testing.T) {
	var pipe bytes.Buffer
	b := New(&pipe, true, 100, "run", 0)
	b.Set(50, "half")
	b.Done(true)
	if pipe.Len() != 0 {
		t.Errorf("drew %q on a writer that is not a terminal", pipe.String())
	}

	var term tty
	b = New(&term, true, 100, "run", 0)
	b.Set(50, "half")
	if s := term.String(); !strings.Contains(s, "50%") || !strings.Contains(s, "half") {
		t.Errorf("terminal shows %q, want 50%% and the description", s)
	}
	b.Done(true)
	if s := term.String(); !strings.Contains(s, "100%") || !strings.HasSuffix(s, "\n") {
		t.Errorf("finished bar %q, want 100%% and a newline", s)
	}

	var off tty
	New(&off, false, 100, "run", time.Second).Set(10, "x")
	if off.Len() != 0 {
		t.Errorf("drew %q with progress off", off.String())
	}
}

func TestInterruptedBarStaysWhereItIs(t *testing.T) {
	var term tty
	b := New(&term, true, 100, "run", 0)
	b.Set(30, "")
	b.Done(false)
	s := term.String()
	if strings.Contains(s, "100%") || !strings.HasSuffix(s, "\n") {
		t.Errorf("interrupted bar %q, want it short of 100%% and ended by a newline", s)
	}
}

// TestOvershootStillFinishes: a run's last report can come a little after
// its nominal end; the bar must still be drawn at 100% when it is done,
// even when redraws are throttled.
func TestOvershootStillFinishes(t *testing.T) {
	var term tty
	b := New(&term, true, 1000, "run", time.Hour)
	b.Set(100, "early")
	b.Set(800, "throttled")
	b.Set(1004, "late")
	b.Done(true)
	if s := term.String(); !strings.Contains(s, "100%") || !strings.HasSuffix(s, "\n") {
		t.Errorf("finished bar %q, want 100%% and a newline", s)
	}
}
