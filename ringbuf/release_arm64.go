//go:build arm64 && !race

package ringbuf

import "sync/atomic"

// storeRelease stores v to *addr with release ordering (STLR). See
// release.go.
//
//go:noescape
func storeRelease(addr *atomic.Uint64, v uint64)

// plainRelease is false: storeRelease is not a plain store (see release.go).
const plainRelease = false

// StoreRelease stores v to *addr with release ordering: the rings'
// publication store, for counters and logs published beside a ring. See
// release_amd64.go.
func StoreRelease(addr *atomic.Uint64, v uint64) { storeRelease(addr, v) }
