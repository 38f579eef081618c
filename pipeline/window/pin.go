package window

import (
	"fmt"
	"time"
)

// Pin is one input of a virtual datapoint: a window over a source
// datapoint, the aggregate it reduces to, and the trigger that says when the
// aggregate is emitted. It keeps its latest emitted value, which every
// calculation uses until the pin emits again. Not safe for concurrent use.
type Pin struct {
	w       win // by value: a pin and its window are one allocation
	agg     Aggregate
	trig    Trigger
	value   float64
	emitted bool
	scratch *[]float64 // median over more than 64 observations only; a pointer keeps Pin small
}

// NewPin builds a pin. Pass values from ParseRange, ParseAggregate and
// ParseTrigger; hand-made ones are validated again.
func NewPin(r Range, a Aggregate, t Trigger) (*Pin, error) {
	w, err := newWin(r)
	if err != nil {
		return nil, err
	}
	if !a.valid() {
		return nil, fieldErr("aggregate", "%q is not an aggregate", string(a))
	}
	if _, err := ParseTrigger(string(t)); err != nil || t == "" {
		return nil, fieldErr("trigger", "%q is not a trigger", string(t))
	}
	return &Pin{w: w, agg: a, trig: t}, nil
}

// Trigger is the pin's trigger.
func (p *Pin) Trigger() Trigger { return p.trig }

// Window is the pin's window, for inspection; adding to it directly
// bypasses the trigger.
func (p *Pin) Window() Window { return &p.w }

// Observe adds an observation of the pin's source to its window. For an
// every_value pin each kept observation fires: the pin emits its aggregate
// over the window's current contents and Observe reports true. A late
// observation inside the span fires too, and is evaluated over the current
// contents (which may hold newer observations) rather than as of its own
// time: the pin's emitted value must be its newest state, because every
// later calculation reuses it. A dropped observation (see Window.Add) never
// fires. Timed pins only collect here; they emit in Fire.
func (p *Pin) Observe(o Observation) (fired bool) {
	if !p.w.Add(o) || p.trig != EveryValue {
		return false
	}
	return p.emit(p.agg.apply(p.w.obs(), p.w.buf[len(p.w.buf)-1].Time, p.medianScratch()))
}

// Fill adds observations of the pin's source, leaving the pin as calling
// Observe on each in turn would (same window, same emitted value), but
// evaluates the aggregate only where that value is decided: after the last
// kept observation, and before a cron window clears for a new period. A
// window refill of n observations then costs O(n) plus one evaluation,
// where n calls of Observe cost O(n) each for the aggregates that read the
// whole window (median, mean, integral): 14 s for a count-100,000 median.
// Fill reports no firing; a caller that needs each calculation calls
// Observe.
func (p *Pin) Fill(obs []Observation) {
	pending := false // a kept observation whose every_value emission is not evaluated yet
	for _, o := range obs {
		if pending && p.w.clearsAt(o.Time) {
			p.emitCurrent()
			pending = false
		}
		if p.w.Add(o) && p.trig == EveryValue {
			pending = true
		}
	}
	if pending {
		p.emitCurrent()
	}
}

// emitCurrent emits the aggregate over the window's current contents at its
// newest observation, as Observe does for an every_value pin (which spells
// it out: the live path stays as it was, one call shallower).
func (p *Pin) emitCurrent() {
	p.emit(p.agg.apply(p.w.obs(), p.w.buf[len(p.w.buf)-1].Time, p.medianScratch()))
}

// Fire evaluates a timed pin at boundary at: the aggregate over the window
// as of at (Window.ObservationsAt), with timeweighted_mean weighing the
// newest value up to at (up to the end point for a cron period that ended
// before at). It reports whether the pin emitted: false when at
// is not one of the pin's boundaries (Trigger.Due), for an every_value pin,
// and when the window as of at is empty (the pin keeps its previous
// emitted value; integral still emits 0, api.md 8).
func (p *Pin) Fire(at time.Time) (fired bool) {
	if !p.trig.Due(at) {
		return false
	}
	at = at.UTC()
	return p.emit(p.agg.apply(p.w.ObservationsAt(at), p.w.evalTime(at), p.medianScratch()))
}

// medianScratch is the median's working slice, made on first use.
func (p *Pin) medianScratch() *[]float64 {
	if p.agg != Median {
		return nil
	}
	if p.scratch == nil {
		p.scratch = new([]float64)
	}
	return p.scratch
}

func (p *Pin) emit(v float64, ok bool) bool {
	if ok {
		p.value, p.emitted = v, true
	}
	return ok
}

// Fresh is a new pin of the same window, aggregate and trigger, empty and
// not yet emitted: a scratch copy for working out what this one held at an
// earlier boundary (Fire on it leaves this pin alone).
func (p *Pin) Fresh() *Pin {
	w := win{kind: p.w.kind, n: p.w.n, d: p.w.d}
	if p.w.cron != nil {
		w.cron = &cronState{startExpr: p.w.cron.startExpr, endExpr: p.w.cron.endExpr}
	}
	return &Pin{w: w, agg: p.agg, trig: p.trig}
}

// Hold makes v the pin's latest emitted value, as if it had emitted v: a
// catch-up gives a timed pin the value it held from a boundary before the
// catch-up's start (actors' holdTimedPins), which its window as of the
// start may no longer show.
func (p *Pin) Hold(v float64) { p.value, p.emitted = v, true }

// Emitted is the pin's latest emitted value; ok is false until it has
// emitted once.
func (p *Pin) Emitted() (value float64, ok bool) { return p.value, p.emitted }

func (p *Pin) String() string {
	return fmt.Sprintf("pin(%s, %s, %d obs)", p.agg, p.trig, p.w.len())
}
