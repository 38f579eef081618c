// Package actors runs every virtual datapoint as a supervised actor.
//
// The engine keeps one actor per running virtual datapoint under a
// supervisor. An actor subscribes to its sources through the pipeline's
// router, rebuilds its windows from stored history when it starts (the
// store is the source of truth, the window only a cache), feeds every
// stored source observation to its Calculator, and writes what the
// calculator emits back through the pipeline, so outputs are stored,
// routed and can feed other virtual datapoints like any observation.
//
// protoactor-go stays behind this package: nothing outside it names an
// actor type, so the cluster issue can place the same actors on several
// nodes without touching the HTTP layer.
package actors

import (
	"time"

	"github.com/openbdp/bdp/pipeline"
)

// Calculator is the pure part of one virtual datapoint: windows,
// aggregates, triggers and the computation. It is owned by one actor and
// never used from two goroutines at once.
type Calculator interface {
	// Sources lists what the calculator reads: each pin's source
	// datapoint and how much history rebuilds its window.
	Sources() []Source
	// Observe feeds one stored observation of a pin's source and returns
	// the output it causes, if any (ok), with its time. One calculation
	// emits one value at most, so no slice is made per output.
	Observe(pin string, o Point) (out Point, ok bool)
	// Tick runs the timed triggers due at boundary t.
	Tick(t time.Time) (out Point, ok bool)
	// NextTick is the next timed-trigger boundary after t; false when the
	// calculator has no timed trigger.
	NextTick(t time.Time) (time.Time, bool)
}

// errorSource is a Calculator that swallows calculation errors (a formula
// dividing by zero emits nothing) and hands them over for reporting.
type errorSource interface {
	TakeError() error
}

// Point is one value at one time.
type Point struct {
	Time  time.Time
	Value float64
}

// Source is one pin's input.
type Source struct {
	Pin         string
	DataPointID string
	// History rebuilds the window on start: the newest Count observations
	// (Count > 0), or every observation since Since (non-zero).
	Count int
	Since func(now time.Time) time.Time
}

// Definition is one virtual datapoint as the engine runs it.
type Definition struct {
	ProjectID   int64
	DataPointID string // the output datapoint
	// NewCalculator builds a fresh calculator: on start and after every
	// restart, so a crash never leaves half-updated state behind.
	NewCalculator func() (Calculator, error)
	// WindowBytes is the estimated heap of its windows (WindowBytes),
	// held against the engine's Budget while it runs.
	WindowBytes int64
}

// Key names a virtual datapoint.
type Key struct {
	ProjectID   int64
	DataPointID string
}

func (d Definition) key() Key { return Key{d.ProjectID, d.DataPointID} }

// SourceVDP marks observations written by virtual datapoints.
const SourceVDP = pipeline.SourceVDP
