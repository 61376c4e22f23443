// Package interrupt turns the first SIGINT or SIGTERM into the cancellation
// of a context, so a command can stop between units of work, write what it
// has and exit with the conventional status (128 + the signal number: 130,
// 143). A second signal gets the default action and ends the process.
package interrupt

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Error is the cause of a context cancelled by a signal. Its ExitCode makes
// it a cli.ExitCoder, so exitcode.Of maps it to 128 + the signal number.
type Error struct{ Signal syscall.Signal }

func (e *Error) Error() string {
	return fmt.Sprintf("interrupted by %s", signalName(e.Signal))
}

// ExitCode is 128 + the signal number, as a shell reports a process the
// signal killed.
func (e *Error) ExitCode() int { return 128 + int(e.Signal) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// Context returns a context that the first SIGINT or SIGTERM cancels with an
// *Error as its cause (context.Cause). stop releases the signals; call it
// when the command is done.
func Context(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch) // a second signal ends the process
			cancel(&Error{Signal: s.(syscall.Signal)})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(context.Canceled)
	}
}

// Cause returns the *Error that cancelled ctx, or nil if no signal did.
func Cause(ctx context.Context) *Error {
	if e, ok := context.Cause(ctx).(*Error); ok {
		return e
	}
	return nil
}
