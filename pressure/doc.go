// Package pressure decides how the goroutines of a pipeline wait for work:
// spin, yield (runtime.Gosched) or park.
//
// A pipeline has one Manager. Every stage goroutine registers once, before
// its first work, and then reports each loop iteration: OnWork when it found
// work, OnEmpty when it found none. The stage has no spin, yield or park logic
// of its own; OnEmpty returns at once, yields or parks the caller as the
// manager decides.
//
// The manager keeps one Level for the whole pipeline. Work moves it straight
// to High; falling to Low and then Idle takes a sustained empty streak, so a
// short gap between bursts causes no park/unpark churn. The WaitStrategy sets
// how long those streaks are; LowLatency never parks. At most GOMAXPROCS-1
// stages spin at a time, so spinning stages never starve the goroutine that
// holds the work.
//
// Whoever makes work visible to a registered stage, other than through that
// stage's own OnWork, must call Manager.Wake (or the fed Stage's Wake) after
// publishing it: the stage may be parked, and this call is what unparks it.
// An entry point that takes external input also calls Wake before
// publishing, so parked stages are already waking when the item lands. With
// that contract no wakeup is lost, whatever the interleaving; the argument is
// in docs/pressure.md and beside Wake.
package pressure
