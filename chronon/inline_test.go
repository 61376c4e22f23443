package chronon_test

import (
	"os/exec"
	"regexp"
	"testing"
)

// TestHotPathInlines compiles examples/minimal, a model package that uses
// chronon's ports with its own message type, and checks that the per-message
// calls inline there: the ring's push, peek and pop, and the cancel check.
// The ports are generic, so their bodies are compiled in the model's package,
// and whether their callees inline there depends on inlining budgets and on
// which callee bodies reach that package's compile. Losing them once cost the
// minimal model about 20% of its cycle with no change in behaviour, which only
// a benchmark (or this test) sees.
func TestHotPathInlines(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a package")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	pkg := "github.com/lanework/lanework/chronon/examples/minimal"
	out, err := exec.Command(gobin, "build", "-o", "/dev/null", "-gcflags="+pkg+"=-m", "./examples/minimal").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, call := range []string{
		`conn\.go:\d+:\d+: inlining call to ringbuf\.\(\*SPSC\[.*\]\)\.TryPush$`,
		`inport\.go:\d+:\d+: inlining call to ringbuf\.\(\*SPSC\[.*\]\)\.Peek$`,
		`inport\.go:\d+:\d+: inlining call to ringbuf\.\(\*SPSC\[.*\]\)\.TryPop$`,
		`inport\.go:\d+:\d+: inlining call to chronon\.\(\*cut\)\.stale$`,
	} {
		if !regexp.MustCompile(`(?m)` + call).Match(out) {
			t.Errorf("no match for %s in the compiler's inlining report", call)
		}
	}
}
