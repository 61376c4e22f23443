package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
)

// openError wraps the error of pebble.Open on dir, as ErrLocked when it
// means another ledger holds the directory's lock. pebble locks the LOCK
// file with fcntl(F_SETLK), which fails with EAGAIN or EACCES, unwrapped,
// while another process holds it; creating the file fails with a
// *fs.PathError instead, which is a permission problem, not a lock. A lock
// held in this process is refused before fcntl, by message only.
func openError(dir, how string, err error) error {
	var pe *fs.PathError
	held := errors.Is(err, syscall.EAGAIN) ||
		(errors.Is(err, syscall.EACCES) && !errors.As(err, &pe)) ||
		strings.Contains(err.Error(), "lock held by current process")
	if held {
		return fmt.Errorf("%w: %s (%v)", ErrLocked, dir, err)
	}
	return fmt.Errorf("ledger: open %s%s: %w", dir, how, err)
}
