package ledger

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"testing"

	"github.com/lanework/lanework/ledger/internal/offline"
	"github.com/stretchr/testify/require"
)

const lockChildEnv = "LEDGER_LOCK_CHILD_DIR"

// TestLockChild is the other process of TestOpenLocked: it opens the ledger
// in $LEDGER_LOCK_CHILD_DIR, says "ready", and holds it until stdin closes.
func TestLockChild(t *testing.T) {
	dir := os.Getenv(lockChildEnv)
	if dir == "" {
		t.Skip("child process of TestOpenLocked")
	}
	l, err := Open(Config{Dir: dir, MaxAccounts: 16})
	require.NoError(t, err)
	os.Stdout.WriteString("ready\n")
	_, _ = io.Copy(io.Discard, os.Stdin)
	require.NoError(t, l.Close())
}

// TestOpenLocked: a directory open in this process or in another one is
// refused by Open, Verify and Dump with ErrLocked, which names the
// directory, and opens normally once the other ledger is closed.
func TestOpenLocked(t *testing.T) {
	refused := func(t *testing.T, dir string) {
		t.Helper()
		_, err := Open(Config{Dir: dir, MaxAccounts: 16})
		require.ErrorIs(t, err, ErrLocked)
		require.ErrorContains(t, err, dir)
		_, err = verifyDir(nil, dir)
		require.ErrorIs(t, err, ErrLocked)
		require.ErrorIs(t, dumpDir(nil, dir, 1, 0, func(*offline.Tx) error { return nil }), ErrLocked)
	}
	t.Run("this process", func(t *testing.T) {
		dir := t.TempDir()
		l, err := Open(Config{Dir: dir, MaxAccounts: 16})
		require.NoError(t, err)
		refused(t, dir)
		require.NoError(t, l.Close())
		l, err = Open(Config{Dir: dir, MaxAccounts: 16})
		require.NoError(t, err)
		require.NoError(t, l.Close())
	})
	t.Run("another process", func(t *testing.T) {
		exe, err := os.Executable()
		require.NoError(t, err)
		dir := t.TempDir()
		cmd := exec.Command(exe, "-test.run=^TestLockChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), lockChildEnv+"="+dir)
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || line != "ready\n" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("child did not open the ledger: %q, %v", line, err)
		}
		refused(t, dir)
		require.NoError(t, stdin.Close())
		require.NoError(t, cmd.Wait())
		l, err := Open(Config{Dir: dir, MaxAccounts: 16})
		require.NoError(t, err)
		require.NoError(t, l.Close())
	})
	// Not a lock: a missing directory for the offline tools.
	_, err := verifyDir(nil, t.TempDir()+"/missing")
	require.False(t, errors.Is(err, ErrLocked), "%v", err)
}
