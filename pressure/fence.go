package pressure

import "sync/atomic"

// fence orders the caller's earlier stores before its later loads.
//
// The Dekker handshake beside Manager.Wake needs the publisher's store of
// the item to precede its load of the level in the single total order of
// sequentially consistent operations. lanework's rings publish with release
// stores (ringbuf/release.go), which on amd64 are plain stores: the CPU may
// let the following load of the level complete while the store still sits
// in its store buffer, and a stage could then re-poll, miss the item, and
// park while the publisher misses the Idle level. A sequentially consistent
// read-modify-write drains the store buffer (LOCK XADD on amd64; on arm64
// the rings' STLR is already ordered before the LDAR of the level load).
// The word is private to the call, so the fence writes no shared line.
func fence() {
	var w atomic.Uint32
	w.Add(1)
}
