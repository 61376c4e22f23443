// Package frontier merges many single-producer lanes into one deterministic
// stream for a single consumer.
//
// Each producer owns a Lane, a bounded SPSC ring from the ringbuf module, and
// tags every message with the cycle at which it arrives. The consumer, a
// Merger, always takes the smallest ready lane head by the key
//
//	(arrive, connID, laneID)
//
// where connID is the stable connection id given at registration and laneID
// is the registration order. A head is ready at cycle c when its arrive cycle
// is at most c. The key never depends on which goroutine published first, so
// results do not depend on goroutine interleaving or on how many workers run
// the producers.
//
// # Selection
//
// With fewer than 32 lanes the consumer scans the lane heads directly and
// producers touch no atomic beyond their own ring. With 32 lanes or more each
// producer also sets its lane's bit, with one atomic OR, in a notification
// word shared by 64 lanes and padded to its own cache line. The consumer
// swaps those words to zero and keeps a private min-heap with at most one
// entry, the head, per non-empty lane. The bits are notifications, not
// ownership: the consumer decides membership by reading the lane itself,
// and rechecks a lane after every pop, so no wakeup is lost (the argument is
// in docs/frontier.md in the repository). TryPop, PopFiltered, HasReady, MinArrivalCycle and Empty
// all read the same frontier, so readiness checks cost O(lanes/64) word loads,
// not a scan of every lane.
//
// # Bounded mode
//
// A Merger made by NewBounded models a finite architectural queue: a
// receiver-owned FIFO of the given capacity, filled from the lanes in merge
// order with at most capacity admissions per receiver cycle (see
// Merger.PrepareCycle). When the FIFO stays full the lanes stop draining and
// each producer sees back pressure on its own lane.
//
// # Heads-only merge
//
// The merger compares lane heads only; it never reorders messages within a
// lane. When each lane's arrive cycles are non-decreasing, as they are for a
// fixed-delay connection, each pop returns the smallest key among all
// published messages that are ready. When a lane's arrive cycles go
// backwards, a message waits behind its lane's earlier messages: every pop
// still returns the smallest key among the current ready lane heads, so the
// result is still deterministic, but it is no longer the global key order.
//
// # Concurrency
//
// Each Lane's TryPush may be called by one producer goroutine at a time. All
// Merger methods are consumer methods, to be called by one goroutine at a
// time, except Lanes and Overflows, which may be called from anywhere.
// AddLane must complete before any producer or consumer method runs, for
// example before the go statements that start the producers.
//
// No push or pop path allocates, takes a lock or boxes a value in an
// interface.
package frontier
