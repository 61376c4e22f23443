//go:build amd64 && !race

package ringbuf

import (
	"sync/atomic"
	"unsafe"
)

// storeRelease stores v to *addr with release ordering. See release.go.
//
// On amd64 this is a plain MOV, written so the compiler can inline it: the
// single-item TryPush and TryPop then inline into the caller, which halves a
// local round trip (the call to an assembly store alone cost more than the
// rest of the push). The compiler keeps it in program order: the gc SSA
// backend threads every store, and every sync/atomic load, through one
// memory chain, and schedules a store only after the loads of the memory it
// replaces, so no earlier slot write or slot read can sink below it. Every
// ring method starts with an atomic load of its own ticket, which also keeps
// the store from being merged with the next call's store. The hardware then
// keeps the order under x86-TSO.
func storeRelease(addr *atomic.Uint64, v uint64) {
	*(*uint64)(unsafe.Pointer(addr)) = v
}

// plainRelease says storeRelease is a plain store, which the single-item
// methods spell out (see release.go).
const plainRelease = true

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
//
// It is declared per platform beside storeRelease (release_amd64.go,
// release_arm64.go, release_atomic.go), so that the inliner costs it at
// about the price of a sync/atomic store.
func StoreRelease(addr *atomic.Uint64, v uint64) {
	*(*uint64)(unsafe.Pointer(addr)) = v // storeRelease, spelled out (see release.go)
}
