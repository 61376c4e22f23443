// Package ringbuf provides bounded, lock-free ring buffers for low-latency
// pipelines: SPSC, with one producer and one consumer goroutine, and MPSC,
// with many producers and one consumer.
//
// Both rings are preallocated with a power-of-two number of slots and index
// them with monotonic absolute uint64 tickets, masked only to pick a slot.
// Because head and tail never wrap modulo the capacity, head == tail means
// empty and tail-head == Cap means full: every slot is usable and no slot is
// reserved as a sentinel. A uint64 ticket does not overflow in practice, and
// the arithmetic is correct across the 2^64 wrap anyway (differences are
// taken modulo 2^64).
//
// No data-path method allocates, takes a lock or boxes a value in an
// interface. Methods that fail because a ring is full or empty return at once
// with false; waiting is the caller's policy (see the pressure module).
//
// # Memory ordering
//
// The Go memory model makes every sync/atomic operation sequentially
// consistent and says that if an atomic load observes the value of an atomic
// store, the store is synchronized before the load. The rings rely only on
// that rule: a producer writes a slot and then stores the ticket that
// publishes it; a consumer that loads that ticket therefore happens after the
// slot write, so its plain read of the slot is race free. Symmetrically, a
// consumer reads (and clears) a slot before storing the head that releases
// it, so a producer that loads that head may overwrite the slot.
//
// The publishing stores are release stores, not sequentially consistent ones
// (see storeRelease): they order everything before them, but a later load by
// the same goroutine may complete before the store is visible. A caller that
// pushes and then inspects a flag another goroutine sets before polling the
// ring (a Dekker handshake, as in parking) must put a sequentially consistent
// atomic operation between the two. docs/ringbuf.md gives the full argument.
package ringbuf

import (
	"errors"
	"fmt"
)

// MaxCapacity is the largest capacity a ring accepts.
const MaxCapacity = 1 << 30

// ErrCapacity is returned by the constructors for a capacity below 1 or
// above MaxCapacity.
var ErrCapacity = errors.New("ringbuf: capacity out of range")

// cacheLinePad separates fields written by different goroutines. 128 bytes
// covers the 64-byte line and the adjacent-line prefetcher of current x86
// parts, and the 128-byte lines of some arm64 parts.
const cacheLinePad = 128

// roundCapacity returns the smallest power of two >= n.
func roundCapacity(n int) (uint64, error) {
	if n < 1 || n > MaxCapacity {
		return 0, fmt.Errorf("%w: %d (want 1..%d)", ErrCapacity, n, MaxCapacity)
	}
	c := uint64(1)
	for c < uint64(n) {
		c <<= 1
	}
	return c, nil
}
