package progress_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lanework/lanework/tools/internal/progress"
)

// terminal is a writer that says it is a terminal, as a tty would.
type terminal struct{ bytes.Buffer }

func (*terminal) IsTerminal() bool { return true }

// A bar draws on a terminal only: to a pipe or a file (here a buffer) it
// writes nothing, so captured output stays clean.
func ExampleNew() {
	var pipe bytes.Buffer
	b := progress.New(&pipe, true, 100, "copying", time.Second)
	b.Set(50, "half way")
	b.Done(true)
	fmt.Printf("pipe: %q, total %d\n", pipe.String(), b.Total())

	var tty terminal
	b = progress.New(&tty, true, 100, "copying", time.Second)
	b.Set(50, "half way")
	b.Done(true)
	fmt.Println("terminal: ends at 100%:", strings.Contains(tty.String(), "100%"), "total", b.Total())

	// An example's stdout is a pipe that go test reads.
	fmt.Println("stdout is a terminal:", progress.IsTerminal(os.Stdout))
	// Output:
	// pipe: "", total 0
	// terminal: ends at 100%: true total 100
	// stdout is a terminal: false
}
