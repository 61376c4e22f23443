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
