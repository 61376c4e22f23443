package ledger

import (
	"sync/atomic"
	"unsafe"
)

// recoveryMem is the memory a recovery fills (cells, account table, closed
// bits) and the Transactor's working cells: a few hundred bytes per
// account of MaxAccounts, zeroed by the allocator.
type recoveryMem struct {
	bal    []atomic.Int64
	accts  *accountTable
	closed closedBits
	work   []int64
}

func newRecoveryMem(maxAccounts uint64) *recoveryMem {
	return &recoveryMem{bal: newCells(maxAccounts), accts: newAccountTable(maxAccounts), closed: newClosedBits(maxAccounts), work: newWorkCells(maxAccounts)}
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
