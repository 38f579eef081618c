package window

import (
	"math"
	"testing"
	"time"
)

func mustPin(t testing.TB, r Range, a Aggregate, tr Trigger) *Pin {
	t.Helper()
	p, err := NewPin(r, a, tr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// step is one action on a pin: an observation (Observe) or, with fire set,
// a trigger boundary (Fire).
type step struct {
	fire  bool
	o     Observation // Observe this, or Fire at o.Time
	fired bool        // expected result
	value float64     // expected Emitted value after the step (NaN: none yet)
}

func TestPin(t *testing.T) {
	none := math.NaN()
	obsAt := func(d time.Duration, v float64, fired bool, want float64) step {
		return step{o: ob(d, v), fired: fired, value: want}
	}
	fireAt := func(d time.Duration, fired bool, want float64) step {
		return step{fire: true, o: ob(d, 0), fired: fired, value: want}
	}
	cases := []struct {
		name  string
		r     Range
		a     Aggregate
		tr    Trigger
		steps []step
	}{
		{"default pin forwards every value", Range{Count: 1}, Max, EveryValue, []step{
			obsAt(sec, 3, true, 3), obsAt(2*sec, 1, true, 1),
			obsAt(sec, 9, false, 1), // late, older than the span: dropped, no firing
			fireAt(min_, false, 1),  // every_value pins do not fire on boundaries
		}},
		{"every_value mean over a time window", Range{Duration: 10 * sec}, Mean, EveryValue, []step{
			obsAt(0, 2, true, 2), obsAt(5*sec, 4, true, 3), obsAt(10*sec, 6, true, 5), // 0 s left the window
		}},
		{"late observation fires with the current contents", Range{Count: 3}, Sum, EveryValue, []step{
			obsAt(sec, 1, true, 1), obsAt(3*sec, 3, true, 4), obsAt(2*sec, 2, true, 6),
			obsAt(4*sec, 4, true, 9), // 2+3+4
		}},
		{"timed pin collects and fires at boundaries only", Range{Duration: 2 * min_}, Max, EveryMinute, []step{
			obsAt(10*sec, 5, false, none), obsAt(70*sec, 3, false, none),
			fireAt(90*sec, false, none), // not a boundary
			fireAt(min_, true, 5),       // as of 1:00: only 10 s
			fireAt(2*min_, true, 5),     // (0:00, 2:00]: 10 s and 70 s
			fireAt(3*min_, true, 3),     // (1:00, 3:00]: 70 s
			fireAt(4*min_, false, 3),    // (2:00, 4:00] is empty: no emission, value kept
		}},
		{"every_hour ignores minute boundaries", Range{Count: 5}, Last, EveryHour, []step{
			obsAt(10*min_, 1, false, none), fireAt(30*min_, false, none), fireAt(hr, true, 1),
		}},
		{"timeweighted_mean weighs the newest value up to the boundary", Range{Duration: hr}, TimeWeightedMean, EveryMinute, []step{
			// 10 for 30 s, 20 for 30 s up to the boundary: 15.
			obsAt(0, 10, false, none), obsAt(30*sec, 20, false, none), fireAt(min_, true, 15),
		}},
		{"integral of an empty window emits 0", Range{Duration: min_}, Integral, EveryMinute, []step{
			fireAt(min_, true, 0),
			obsAt(min_+10*sec, 1, false, 0), obsAt(min_+20*sec, 3, false, 0),
			fireAt(2*min_, true, 20), // (1+3)/2 · 10 s
		}},
		{"cron window with an hourly trigger", Range{CronStart: "0 8 * * *", CronEnd: "0 10 * * *"}, Sum, EveryHour, []step{
			obsAt(8*hr, 1, false, none), obsAt(9*hr+30*min_, 2, false, none),
			fireAt(9*hr, true, 1), fireAt(10*hr, true, 3), fireAt(11*hr, true, 3), // completed period
			fireAt(32*hr, false, 3), // next day's start point: cleared
		}},
		{"cron timeweighted_mean after the end weighs up to the end", Range{CronStart: "0 8 * * *", CronEnd: "0 10 * * *"}, TimeWeightedMean, EveryHour, []step{
			// 10 from 8:00 to 9:00, 20 from 9:00 to the end at 10:00: 15, at
			// 10:00 and still at 11:00 (not 20 for two hours).
			obsAt(8*hr, 10, false, none), obsAt(9*hr, 20, false, none),
			fireAt(10*hr, true, 15), fireAt(11*hr, true, 15),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustPin(t, c.r, c.a, c.tr)
			for i, s := range c.steps {
				var fired bool
				if s.fire {
					fired = p.Fire(s.o.Time)
				} else {
					fired = p.Observe(s.o)
				}
				v, ok := p.Emitted()
				if fired != s.fired || ok == math.IsNaN(s.value) || (ok && math.Abs(v-s.value) > 1e-12) {
					t.Fatalf("step %d (fire %v at %v): fired %v, emitted %v %v; want %v, %v",
						i, s.fire, s.o.Time.Sub(t0), fired, v, ok, s.fired, s.value)
				}
			}
		})
	}
}

func TestNewPinRejects(t *testing.T) {
	if _, err := NewPin(Range{Count: 1}, "avg", EveryValue); err == nil {
		t.Error("bad aggregate accepted")
	}
	if _, err := NewPin(Range{Count: 1}, Max, "sometimes"); err == nil {
		t.Error("bad trigger accepted")
	}
	if _, err := NewPin(Range{Count: 1}, Max, ""); err == nil {
		t.Error("empty trigger accepted: NewPin takes parsed values")
	}
	p := mustPin(t, Range{Count: 2}, Median, EveryMinute)
	if p.Trigger() != EveryMinute || p.Window() == nil || p.String() == "" {
		t.Error("accessors")
	}
}
