// Package pressure decides how the goroutines of a pipeline wait for work:
// spin, yield (runtime.Gosched) or park.
//
// A pipeline has one Manager. Every stage goroutine registers once and then
// reports each loop iteration: OnWork when it found work, OnEmpty when it found
// none. The stage contains no spin, yield or park logic of its own; OnEmpty
// spins (returns at once), yields or parks the caller as the manager decides.
//
// # Pressure level
//
// The manager keeps one Level for the whole pipeline. Work moves it straight
// to High (OnWork and Wake), and leaving Idle unparks every parked stage.
// Falling from High to Low and from Low to Idle takes a sustained empty streak
// of some stage, so a short gap between bursts causes no park/unpark churn.
// The WaitStrategy sets how long those streaks are; LowLatency never parks.
//
// # Wake contract
//
// Whoever makes work visible to a registered stage, other than through that
// stage's own OnWork, calls Manager.Wake after publishing it; this call is
// required for correctness, because the stage may be parked. An entry point
// (the goroutine that takes external input, such as a ledger's sequencer)
// also calls Wake before publishing, so that parked stages are already waking
// when the item lands. When the level is High, Wake is a store-load fence on
// a private word (see fence) and a single atomic load of the shared level.
// A stage's own OnWork, called after it popped, does the same for a producer
// waiting for room in that stage's input: it loads the level after the pop
// exactly as Wake would.
//
// # Why no wakeup is lost
//
// All the atomics involved are sync/atomic operations, which the Go memory
// model makes sequentially consistent: there is one total order of them that
// every goroutine agrees with. The argument is a Dekker handshake:
//
//   - A stage parks only on an OnEmpty call that observes Idle, after an
//     earlier OnEmpty call that also observed Idle ("armed"), with the caller's
//     poll of its input in between. Call that first observation L and the
//     poll P; L precedes P.
//   - A publisher stores the item (S) and then, in Wake, loads the level (W);
//     S precedes W. If S is a sequentially consistent store this is program
//     order; lanework's rings publish with release stores, so Wake first
//     executes a sequentially consistent fence (see fence), which orders S
//     before W all the same.
//   - Level leaves Idle only by a compare-and-swap to High, and the one
//     goroutine whose swap moves it out of Idle then sends a wake token to
//     every registered stage. Tokens are permits: a chan struct{} of capacity
//     1 per stage, sent without blocking; a token sent before the stage parks
//     makes the park return at once, so an unpark racing a park is never lost.
//
// Take the stage's last park before S. If S precedes P, the poll sees the item
// and the stage does not park. Otherwise L < P < S < W. If W observes Idle, the
// publisher moves the level out of Idle and sends the stage a token. If W
// observes Low or High, the level left the Idle that L observed at some point
// between L and W, and the goroutine that moved it sent the token. Either way
// a token reaches the stage after L, so its park returns and it polls again.
// Concurrent Wake callers race only on the compare-and-swap; exactly one wins
// per Idle period and sends the tokens, the others find the level not Idle.
// A stage registering later than some Wake has not yet observed Idle, so that
// Wake is not one it needs; the next transition out of Idle loads the stage
// list after its swap and so includes it.
//
// # Sharing
//
// Under sustained load the level stays High, and OnWork, OnEmpty and Wake only
// load it: it shares a cache line only with read-mostly fields and is written
// on transitions only.
// Each Stage keeps its streak and counters on its own padded cache line,
// written by its owner goroutine alone. A short empty streak touches no shared
// state at all; only a stage that keeps finding nothing competes for one of
// the spin slots (GOMAXPROCS-1 at most, none once the stages outnumber the
// Ps), so that spinning stages never starve the goroutine that holds the work.
package pressure
