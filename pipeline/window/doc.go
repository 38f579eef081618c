// Package window is the pure core of virtual datapoints (api.md 2.10, 2.11,
// 8; decisions.md 5): the data_range windows of a pin, the aggregates over a
// window, the triggers, the calculation's firing rules, the gradient and the
// absolute humidity. It has no actors, no I/O and no wall clock: every time
// comes from the caller (an observation's event time or a trigger
// boundary), so the live engine and an exact recompute over history run the
// same code and get the same answers.
//
// Reading order:
//
//   - range.go: data_range parsing and validation (ParseRange).
//   - window.go: Window and its three kinds (count, time, cron), buffer.go
//     the storage they share, cron.go the cron periods.
//   - aggregate.go: Aggregate (last ... integral).
//   - trigger.go: Trigger, its boundaries (Due, Next, Boundaries).
//   - pin.go and calc.go: Pin (window + aggregate + trigger) and Calc (the
//     pins of one virtual datapoint and when a calculation runs).
//   - gradient.go and humidity.go: the two fixed calculation types.
//
// # Event time
//
// Windows are ordered by the observations' event time, never by arrival. A
// late observation inside the window's span is inserted in its place; one
// older than the span is dropped (Add reports false) — a recompute over the
// stored history covers it. Observations are unique per time (decisions.md
// 4): a second observation with the time of one in the window replaces its
// value. All times are handled in UTC with the monotonic clock reading
// stripped, so two readings of one instant always compare equal.
//
// # Spans
//
//   - count n: the n newest observations. A late observation older than the
//     n-th newest is dropped.
//   - time d: the observations in (latest-d, latest], latest the newest
//     event time seen: left-open so that a window of 60s holds exactly 60
//     seconds and an observation never counts in two adjacent windows of an
//     hour's tiling; right-closed so that the triggering observation itself
//     is in its window.
//   - cron start/end: the period [S, E) with S the latest start point at or
//     before the observation and E the first end point after S; half-open
//     like a calendar bucket, so an observation exactly at a start point
//     opens the new period. Observations between E and the next start point
//     are not kept; the finished period's observations stay until that next
//     start point, so a trigger after E still sees the completed period. At
//     the next start point the window is cleared.
//
// Window.ObservationsAt(t) is the window "as of" event time t, the view a
// timed trigger at boundary t evaluates: (t-d, t] for a time window, the
// newest n at or before t, the period containing t for cron. It lets a live
// actor (timer at the wall-clock boundary, possibly after a quiet spell in
// which the window did not slide) and a recompute (boundaries interleaved in
// event time) compute the same thing. It cannot bring back an observation
// that newer data has already evicted; that only happens when data newer than
// t arrived before the boundary t was evaluated, which a recompute never does
// and a live actor does only with a late timer or a source clock running
// ahead.
//
// # Aggregates, triggers, calculations
//
// An every_value pin emits on each observation its window keeps, evaluated
// over the current contents (a late observation included; see Pin.Observe).
// A timed pin (every_minute, every_hour: UTC boundaries) emits at each
// boundary B the aggregate over the window as of B, and nothing when that
// view is empty. timeweighted_mean treats the values as steps, the newest
// lasting until the evaluation time: its own time for every_value (weight
// 0), B for timed triggers (a cron period's end if that comes first).
// integral is the trapezoid between the observations in value·seconds, 0
// for fewer than two (api.md 8). A Calc runs the calculation when any pin
// emits and every pin has emitted at least once, with every pin's latest
// emitted value; the output time is the triggering observation's time or
// the boundary (decisions.md 5).
//
// A live actor sets a timer for Trigger.Next and calls Calc.Tick with the
// boundary it was set for. A recompute merges the pins' histories in time
// order and ticks every minute boundary before the first observation after
// it (Tick skips boundaries no pin is due at):
//
//	cursor := from
//	for _, in := range history { // {pin, obs}, sorted by obs.Time
//		for b := range window.Boundaries(window.EveryMinute, cursor, in.obs.Time.Add(-time.Nanosecond)) {
//			if f, ok := calc.Tick(b); ok { write(f.Time, calc.Values(names)) }
//		}
//		cursor = in.obs.Time.Add(-time.Nanosecond)
//		if f, ok := calc.Observe(in.pin, in.obs); ok { write(f.Time, calc.Values(names)) }
//	}
//
// # Memory
//
// A window keeps its observations in one contiguous slice sorted by time
// (buffer.go), so aggregates read it in place without copying. A count
// window allocates n + max(2, ⌈n/7⌉) slots once and never grows; time and cron
// windows grow with the data and shrink again, capped at MaxObservations.
// A calculation of five pins with count-10 windows takes about 3 KiB of heap.
// EstimateBytes (estimate.go) bounds a pin's heap from its range, aggregate
// and the shortest interval assumed between its source's observations; the
// engine's window budget is built on it.
package window
