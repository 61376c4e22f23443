package interrupt

import (
	"context"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSignalCancelsWithCause(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
		msg  string
	}{{syscall.SIGINT, 130, "interrupted by SIGINT"}, {syscall.SIGTERM, 143, "interrupted by SIGTERM"}} {
		ctx, stop := Context(context.Background())
		if err := syscall.Kill(syscall.Getpid(), tc.sig); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%v did not cancel the context", tc.sig)
		}
		e := Cause(ctx)
		if e == nil || e.ExitCode() != tc.code || e.Error() != tc.msg {
			t.Errorf("%v: cause %v, want %q with exit code %d", tc.sig, context.Cause(ctx), tc.msg, tc.code)
		}
		stop()
	}
}

func TestStopWithoutSignal(t *testing.T) {
	ctx, stop := Context(context.Background())
	stop()
	<-ctx.Done()
	if Cause(ctx) != nil {
		t.Errorf("cause %v after stop, want no signal", context.Cause(ctx))
	}
}
