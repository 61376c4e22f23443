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
// # Waiting within the Ps
//
// Stages share the Go scheduler's Ps with the goroutines that feed them
// (connection readers, pebble's log writer, callers). A stage that polls
// with runtime.Gosched stays runnable, and the scheduler polls the network
// only when a P finds no runnable goroutine (or from sysmon, every 10 ms):
// stages that keep every P busy delay the next input by milliseconds. So at
// most GOMAXPROCS-1 stages hold a spin slot, and under Balanced and LowCPU a
// stage without one yields only for a short budget and then parks, whatever
// the level; the slot holder yields until the level falls, and its streak
// clock is what lowers it. The last stage to park moves the level to Idle.
//
// # Wake contract
//
// Whoever makes work visible to a registered stage, other than through that
// stage's own OnWork, calls Manager.Wake after publishing it; this call is
// required for correctness, because the stage may be parked. An entry point
// (the goroutine that takes external input, such as a ledger's sequencer)
// also calls Wake before publishing, so that parked stages are already waking
// when the item lands. When the level is High and no stage is parked, Wake is
// a store-load fence on a private word (see fence) and two atomic loads.
// A publisher that knows which stage it feeds calls that Stage's Wake
// instead, which unparks only that stage when the level is above Idle. A
// stage that pops, and so makes room for a producer stage waiting on back
// pressure, wakes that producer the same way.
//
// # Why no wakeup is lost
//
// All the atomics involved are sync/atomic operations, which the Go memory
// model makes sequentially consistent: there is one total order of them that
// every goroutine agrees with. The argument is a Dekker handshake:
//
//   - A stage parks in two OnEmpty calls. The first announces the park: it
//     stores the stage's parking flag and then adds one to the manager's
//     parked count (A). The caller then polls its input (P), and only the
//     next OnEmpty parks; A precedes P. The stage withdraws the announcement
//     (flag, then count) only after it has woken or found work.
//   - A publisher stores the item (S) and then, in Wake, loads the parked
//     count (W); S precedes W. If S is a sequentially consistent store this
//     is program order; lanework's rings publish with release stores, so
//     Wake first executes a sequentially consistent fence (see fence), which
//     orders S before W all the same.
//   - If W sees a non-zero count, Wake loads every stage's flag and sends a
//     wake token to each flagged stage. (Stage.Wake loads its stage's flag
//     directly as W: the flag is stored before A, and the same argument
//     applies to it.) Tokens are permits: a chan struct{}
//     of capacity 1 per stage, sent without blocking; a token sent before the
//     stage parks makes the park return at once, so an unpark racing a park
//     is never lost.
//
// Take a park of the stage that no token ends, and its announcement A. If
// S precedes P, the poll sees the item and the stage does not park. Otherwise
// A < P < S < W, so W observes A's increment, which the stage has not
// withdrawn (it withdraws only after waking); the flag stored before A is
// then visible to Wake's later load, and Wake sends the token: a
// contradiction. Concurrent Wake callers each do this; extra tokens only make
// a later park return early, and the caller polls again.
//
// Leaving Idle additionally unparks every stage (the goroutine whose
// compare-and-swap takes the level out of Idle sends the tokens), so that
// downstream stages are already running when the first item reaches them.
// A stage registering later than some Wake has not announced a park before
// that Wake, so that Wake is not one it needs.
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
