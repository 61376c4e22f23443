package ledger

import (
	"sync/atomic"
	"unsafe"
)

// recoveryMem is the memory a recovery fills (cells, account table, closed
// bits): a hundred-odd bytes per account of MaxAccounts, zeroed by the
// allocator.
type recoveryMem struct {
	bal    []atomic.Int64
	accts  *accountTable
	closed closedBits
}

func newRecoveryMem(maxAccounts uint64) *recoveryMem {
	return &recoveryMem{bal: newCells(maxAccounts), accts: newAccountTable(maxAccounts), closed: newClosedBits(maxAccounts)}
}

// allocAhead allocates the recovery memory of maxAccounts on a goroutine
// of its own: zeroing it (a twentieth of an Open that replays 1M accounts)
// overlaps Open's store checks. The channel delivers it; Open receives it
// on every path, so the goroutine never outlives Open.
func allocAhead(maxAccounts uint64) <-chan *recoveryMem {
	ch := make(chan *recoveryMem, 1)
	go func() { ch <- newRecoveryMem(maxAccounts) }()
	return ch
}

// newWorkCells allocates the Transactor's working cells of maxAccounts
// slots, in huge pages where the kernel allows.
func newWorkCells(maxAccounts uint64) []int64 {
	w := make([]int64, cellsPerAccount*maxAccounts)
	adviseHuge(unsafe.Pointer(&w[0]), uintptr(len(w))*8)
	return w
}

// workCopy is newWork run on a goroutine of its own once the replay is
// done: allocating and filling the working cells (32 MB for 1M accounts,
// bound by memory bandwidth) overlaps the rest of Open (the checks of the
// replayed state, pebble's read-write open, the account records' check),
// and the Transactor's start waits for it.
type workCopy struct {
	done chan struct{}
	w    []int64
}

func copyWorkAhead(maxAccounts uint64, rs *recovered) *workCopy {
	c := &workCopy{done: make(chan struct{})}
	// Nothing writes rs.bal or rs.accts.n from here on (the replay is
	// done, and the stages have not started).
	n := rs.accts.n
	go func() {
		defer close(c.done)
		c.w = newWork(maxAccounts, n, rs.bal)
	}()
	return c
}

// wait returns the working cells; nil-safe (no copy ahead: nil).
func (c *workCopy) wait() []int64 {
	if c == nil {
		return nil
	}
	<-c.done
	return c.w
}
