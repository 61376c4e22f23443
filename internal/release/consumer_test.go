package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// consumerPrograms use each module the way an outside program would; each
// prints one line the test checks.
var consumerPrograms = map[string]struct{ src, want string }{
	"ringbuf": {`package main

import (
	"fmt"

	"github.com/lanework/lanework/ringbuf"
)

func main() {
	r, err := ringbuf.NewSPSC[int](4)
	if err != nil {
		panic(err)
	}
	r.TryPush(41)
	v, _ := r.TryPop()
	fmt.Println("ringbuf", v+1)
}
`, "ringbuf 42"},
	"frontier": {`package main

import (
	"fmt"

	"github.com/lanework/lanework/frontier"
)

func main() {
	m := frontier.New[string]()
	a, _ := m.AddLane(7, 4)
	b, _ := m.AddLane(3, 4)
	a.TryPush(5, "a")
	b.TryPush(5, "b")
	x, _, _ := m.TryPop(5)
	y, _, _ := m.TryPop(5)
	fmt.Println("frontier", x+y)
}
`, "frontier ba"},
	"pressure": {`package main

import (
	"fmt"

	"github.com/lanework/lanework/pressure"
)

func main() {
	w, err := pressure.ParseWaitStrategy("low-cpu")
	fmt.Println("pressure", w, err)
}
`, "pressure low-cpu <nil>"},
	"ledger": {`package main

import (
	"context"
	"fmt"
	"os"

	"github.com/lanework/lanework/ledger"
)

func main() {
	dir, err := os.MkdirTemp("", "consumer-ledger")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	l, err := ledger.Open(ledger.Config{Dir: dir, MaxAccounts: 16})
	if err != nil {
		panic(err)
	}
	r, err := l.SubmitAndWait(context.Background(), ledger.Deposit{Account: 1, Amount: 5}, ledger.Committed)
	if err != nil {
		panic(err)
	}
	fmt.Println("ledger", r.ID, l.Close())
}
`, "ledger 1 <nil>"},
	"ledgercluster": {`package main

import (
	"fmt"

	"github.com/lanework/lanework/ledgercluster"
)

func main() {
	peers, err := ledgercluster.ParsePeers("1=127.0.0.1:7101,2=127.0.0.1:7102,3=127.0.0.1:7103")
	fmt.Println("ledgercluster", len(peers), peers[2], err)
}
`, "ledgercluster 3 127.0.0.1:7102 <nil>"},
	"chronon": {`package main

import (
	"fmt"

	"github.com/lanework/lanework/chronon"
)

type stopper struct{ chronon.Base }

func (s *stopper) Tick() {
	if s.Cycle() == 3 {
		s.Terminate("done", 0, "three cycles")
	}
}

func main() {
	s := chronon.New()
	if err := s.Add("stopper", &stopper{}); err != nil {
		panic(err)
	}
	if err := s.Build(); err != nil {
		panic(err)
	}
	t, err := s.RunUntilTermination(10)
	fmt.Println("chronon", t.Reason, t.Cycle, err)
}
`, "chronon done 3 <nil>"},
}

// TestConsumer is what a user outside the repository does: go get each module
// and build a program on it, and go install both command-line programs, all
// with the workspace off and only file proxies to resolve modules from.
func TestConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every module outside the workspace")
	}
	r, err := loadRepo("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	o, err := newOffline(r, tmp)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := o.prefetch(); err != nil {
		t.Fatal(err)
	}
	t.Logf("proxy and prefetch: %v", time.Since(t0).Round(time.Millisecond))
	scratch := filepath.Join(tmp, "consumer")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(scratch, "go.mod"), "module example.com/consumer\n\ngo 1.26\n")
	write(t, filepath.Join(scratch, "go.sum"), thirdPartySums(t, r))

	env, err := o.env(false)
	if err != nil {
		t.Fatal(err)
	}
	// The seeded go.sum holds every third-party hash the modules need, and
	// siblings from the worktree have no published hash to check.
	env = append(env, "GOSUMDB=off", "GOBIN="+filepath.Join(tmp, "bin"))
	gocmd := func(args ...string) string {
		t.Helper()
		defer func(t0 time.Time) { t.Logf("go %s: %v", args[0], time.Since(t0).Round(time.Millisecond)) }(time.Now())
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = scratch, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	get := []string{"get"}
	for _, m := range r.Modules {
		get = append(get, m.Path+"@"+TestVersion)
	}
	gocmd(get...)
	var names []string
	for name, p := range consumerPrograms {
		names = append(names, name)
		write(t, filepath.Join(scratch, "cmd", name, "main.go"), p.src)
	}
	slices.Sort(names)
	bin := filepath.Join(tmp, "progs") + string(filepath.Separator)
	gocmd("build", "-o", bin, "./...")
	for _, name := range names {
		out, err := exec.Command(filepath.Join(bin, name)).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != consumerPrograms[name].want {
			t.Errorf("%s printed %q, want %q", name, got, consumerPrograms[name].want)
		}
	}

	tools := pathPrefix + "tools/cmd/"
	gocmd("install", tools+"ledger@"+TestVersion, tools+"chronon@"+TestVersion)
	for _, prog := range []string{"ledger", "chronon"} {
		out, err := exec.Command(filepath.Join(tmp, "bin", prog), "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --version: %v\n%s", prog, err, out)
		}
		if !bytes.Contains(out, []byte(TestVersion)) {
			t.Errorf("%s --version = %q, want it to name %s", prog, out, TestVersion)
		}
	}
}

// thirdPartySums is the union of the committed go.sum files.
func thirdPartySums(t *testing.T, r *repo) string {
	seen := map[string]bool{}
	var lines []string
	for _, m := range r.Modules {
		data, err := os.ReadFile(filepath.Join(r.Root, m.Dir, "go.sum"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for l := range strings.Lines(string(data)) {
			if !seen[l] {
				seen[l] = true
				lines = append(lines, l)
			}
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "")
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
