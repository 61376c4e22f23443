package ringbuf

// Publication stores.
//
// A ring publishes a slot (or releases it) with one store of a ticket, and
// needs only release ordering there: every write before the store must be
// visible to a goroutine whose load observes it. sync/atomic stores are
// sequentially consistent, which on amd64 costs a locked XCHG (about 7-9 ns
// on the reference machine, more than the rest of a push). storeRelease gives
// exactly release ordering:
//
//   - amd64: a plain MOV, written in Go so that it inlines (release_amd64.go
//     says why the compiler keeps it in place). Under x86-TSO a store is
//     never reordered with earlier loads or stores, so it is a release store.
//   - arm64: STLR, the architecture's store-release, in assembly; the
//     compiler does not move memory accesses across a call to an assembly
//     function.
//   - elsewhere, and in race-detector builds (whose happens-before tracking
//     only understands sync/atomic), it is atomic.Uint64.Store.
//
// The amd64 and arm64 forms step outside what the Go memory model promises:
// it defines ordering only for sync/atomic operations. The argument for them
// is the hardware model plus the compiler's ordering, stated where they are
// defined; the race-detector build, which runs the same tests with
// sequentially consistent stores, checks the algorithm under the Go memory
// model proper.
//
// The matching loads are atomic.Uint64.Load, which is a plain MOV on amd64
// and LDAR on arm64: acquire loads. The pair gives the edge the rings rely
// on: a write before storeRelease(x, v) is visible to a read after a Load(x)
// that returns v. What it does not give is a store-load fence, so a caller
// that needs a Dekker-style handshake after a push (store the item, then
// load a flag) must issue its own sequentially consistent operation.
//
// The single-item methods (TryPush, TryPop, Commit, Advance) spell the amd64
// store out under `if plainRelease` instead of calling storeRelease. They are
// generic, so a package that uses a ring through another package (chronon's
// ports, instantiated in the model's package) compiles their bodies itself,
// and it can inline a call to the unexported storeRelease only if the body
// of storeRelease reached it in some package's export data; the compiler
// re-exports such a body only from packages that inlined it themselves. When
// it does not, the call costs the inliner more than the budget of those
// methods, they stop inlining, and every push and pop becomes a call (this
// cost chronon's minimal model about 20% of its cycle). The constant makes
// the other branch dead, which the inliner does not count.
