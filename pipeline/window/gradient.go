package window

import (
	"math"
	"time"
)

// DefaultFactorization is the gradient's factor when the parameter
// factorization is absent (api.md 2.11).
const DefaultFactorization = 1.0

// Gradient computes the gradient type (api.md 2.11): value =
// (x1-x2)/(y1-y2) × Factor, x1 and x2 the values of the two latest inputs
// and y1, y2 their unix times in seconds (nanosecond precision), so the
// unit is the input's unit per second. The inputs are the emitted values of
// the pin "input" at their firing times. The first output comes with the
// second input. The zero Gradient has Factor 0; set DefaultFactorization
// when the parameter is absent.
//
// Inputs must arrive in time order. One at the time of the latest replaces
// its value (decisions.md 4: one value per time) and the gradient at that
// time is emitted again with the new value, so the stored series ends up
// as a recompute over the stored inputs would make it; y1 = y2 therefore
// never occurs. One older than the latest is ignored, since the gradient
// that would change is already written (a recompute covers it).
type Gradient struct {
	Factor float64

	prev, last Observation
	n          int // inputs seen, up to 2
}

// Observe feeds the next input and returns the gradient at its time; ok is
// false for the first input, for an out-of-order one and for NaN or
// infinite values.
func (g *Gradient) Observe(o Observation) (value float64, ok bool) {
	if math.IsNaN(o.Value) || math.IsInf(o.Value, 0) {
		return 0, false
	}
	o.Time = o.Time.UTC()
	switch {
	case g.n > 0 && o.Time.Before(g.last.Time):
		return 0, false
	case g.n > 0 && o.Time.Equal(g.last.Time):
		g.last.Value = o.Value
	default:
		g.prev, g.last = g.last, o
		g.n = min(g.n+1, 2)
	}
	if g.n < 2 {
		return 0, false
	}
	v := (g.last.Value - g.prev.Value) / unixSeconds(g.last.Time, g.prev.Time) * g.Factor
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false // huge values over a nanosecond apart; nothing to write
	}
	return v, true
}

// unixSeconds is y1 - y2 for two unix times in seconds, computed as a
// duration so that nanoseconds survive (two unix times near 1.7e9 as
// float64 would keep only about 0.2 µs).
func unixSeconds(y1, y2 time.Time) float64 { return y1.Sub(y2).Seconds() }
