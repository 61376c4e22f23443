package ringbuf

import (
	"sync/atomic"
	"unsafe"
)

// StoreRelease stores v to *addr with release ordering: every write (and
// read) the goroutine made before it happens before any read that follows
// an atomic.Uint64.Load of *addr returning v. It is the store the rings
// publish with (see the package's memory ordering): a plain MOV on amd64
// outside race builds, STLR on arm64, and atomic.Uint64.Store elsewhere and
// under the race detector, which then checks its callers under the Go memory
// model proper.
//
// It suits a counter or log published beside a ring (message passing: the
// writer stores the data, then the count; a reader loads the count, then
// the data). It is not a store-load fence: a Dekker handshake (store, then
// load a flag another goroutine stores before loading this word) needs a
// sequentially consistent operation between the two.
func StoreRelease(addr *atomic.Uint64, v uint64) {
	if plainRelease {
		*(*uint64)(unsafe.Pointer(addr)) = v // storeRelease, spelled out (see release.go)
		return
	}
	storeRelease(addr, v)
}
