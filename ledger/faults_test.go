package ledger

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"
)

// A failed write or sync of a WAL segment stops the ledger (fail-stop: every
// call returns an error wrapping ErrFailed, nothing more is acknowledged),
// and the process then exits the way kill -9 would end it: the batch being
// written is never acknowledged, and recovery proceeds as after a crash.
// These tests run the ledger in a child process (this test binary
// re-executed) and check exactly that.

const faultChildEnv = "LEDGER_FAULT_CHILD" // "dir,opkind"

// TestDiskFaultChild is the child side; it is skipped in a normal run.
func TestDiskFaultChild(t *testing.T) {
	spec := os.Getenv(faultChildEnv)
	if spec == "" {
		t.Skip("child process of TestDiskFaultWAL")
	}
	dir, kindS, _ := strings.Cut(spec, ",")
	kind, _ := strconv.Atoi(kindS)
	var on atomic.Bool
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if on.Load() && errorfs.OpKind(kind) == op.Kind && strings.HasSuffix(op.Path, ".wal") {
			return errorfs.ErrInjected
		}
		return nil
	})
	l, err := Open(Config{Dir: dir, FS: errorfs.Wrap(vfs.Default, inj), MaxAccounts: 16, SnapshotEvery: 20})
	require.NoError(t, err)
	ctx := context.Background()
	for i := 1; ; i++ {
		if i == 60 {
			fmt.Println("fault")
			on.Store(true)
		}
		r, err := l.SubmitAndWait(ctx, Deposit{Account: 1 + uint64(i)%15, Amount: uint64(i), UserRef: uint64(i)}, Committed)
		if err != nil {
			fmt.Println("error", err) // fail-stop through the waiting call
			cerr := l.Close()
			fmt.Println("close", errors.Is(cerr, ErrFailed), errors.Is(err, ErrFailed))
			os.Exit(7)
		}
		fmt.Println("ack", r.ID, r.UserRef)
	}
}

func TestDiskFaultWAL(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	for name, kind := range map[string]errorfs.OpKind{"write": errorfs.OpFileWrite, "sync": errorfs.OpFileSyncData} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(exe, "-test.run=^TestDiskFaultChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s,%d", faultChildEnv, dir, kind))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%s", out)
			ws := ee.Sys().(syscall.WaitStatus)
			require.Equal(t, 7, ws.ExitStatus(), "stdout %s\nstderr %s", out, stderr.Bytes())
			require.Contains(t, string(out), "injected error")
			require.Contains(t, string(out), "close true true")
			acked := map[TxID]uint64{}
			var fault bool
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				switch {
				case len(f) == 1 && f[0] == "fault":
					fault = true
				case len(f) == 3 && f[0] == "ack":
					require.False(t, fault, "acknowledged after the fault: %s", sc.Text())
					id, _ := strconv.ParseUint(f[1], 10, 64)
					ref, _ := strconv.ParseUint(f[2], 10, 64)
					acked[TxID(id)] = ref
				}
			}
			require.True(t, fault)
			require.Len(t, acked, 59)
			// Recovery as after a crash: everything acknowledged is there.
			l, err := Open(Config{Dir: dir, MaxAccounts: 16, SnapshotEvery: 20})
			require.NoError(t, err)
			for id, ref := range acked {
				r, err := l.Result(id)
				require.NoError(t, err)
				require.Equal(t, ref, r.UserRef)
			}
			x, _ := l.Indexes()
			require.GreaterOrEqual(t, x.Committed, TxID(59))
			require.LessOrEqual(t, x.Committed, TxID(60), "only the faulted tx can be extra")
			require.NoError(t, l.Close())
			_, err = verifyDir(nil, dir)
			require.NoError(t, err)
		})
	}
}
