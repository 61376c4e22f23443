// Package pressure decides how the goroutines of a pipeline wait for work:
// spin, yield (runtime.Gosched) or park.
//
// A pipeline has one Manager. Each stage goroutine registers once, before
// its first wait, and then reports every loop iteration: OnWork when it
// found work, OnEmpty when it found none. OnEmpty returns at once, after a
// yield or after a park, as the manager decides; the stage has no waiting
// logic of its own.
//
// The manager keeps one Level for the pipeline. Work raises it straight to
// High; empty streaks lower it one step at a time, and it drops to Idle once
// every stage has announced a park. The WaitStrategy chooses how soon an
// empty stage stops spinning and parks; LowLatency never parks. Past a short
// free spin, at most GOMAXPROCS-1 stages spin at once, so spinning stages
// cannot starve the goroutine that holds the work.
//
// Whoever makes work visible to a stage, other than that stage itself, must
// call Manager.Wake, or the Stage.Wake of the stage it feeds, after
// publishing it. An entry point that takes external input calls Wake (or
// Stage.Prewake, which orders nothing and so needs no fence) before
// publishing as well, so parked stages are already waking when the item
// lands. With that contract no wakeup is lost, whatever the interleaving
// (docs/pressure.md gives the argument).
package pressure
