package window

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

// ev is one event for a Calc: an observation of a pin, or a Tick when pin is
// empty. want is the Firing time expected (or -1 for none) and vals the
// Values of P1, P2 after a firing.
type ev struct {
	pin  string
	o    Observation
	want time.Duration
	vals []float64
}

const noFire = time.Duration(-1)

func obsEv(pin string, d time.Duration, v float64, want time.Duration, vals ...float64) ev {
	return ev{pin: pin, o: ob(d, v), want: want, vals: vals}
}

func tickEv(d time.Duration, want time.Duration, vals ...float64) ev {
	return ev{o: ob(d, 0), want: want, vals: vals}
}

func TestCalc(t *testing.T) {
	type pinDef struct {
		r  Range
		a  Aggregate
		tr Trigger
	}
	fwd := pinDef{Range{Count: 1}, Max, EveryValue}
	cases := []struct {
		name string
		pins map[string]pinDef
		evs  []ev
	}{
		{"no output until every pin emitted, then on every value", map[string]pinDef{"P1": fwd, "P2": fwd}, []ev{
			obsEv("P1", sec, 1, noFire),
			obsEv("P1", 2*sec, 2, noFire),
			obsEv("P2", 3*sec, 30, 3*sec, 2, 30),
			obsEv("P1", 4*sec, 4, 4*sec, 4, 30),
			obsEv("P2", 3*sec, 33, 3*sec, 4, 33), // same time replaces and fires again
			obsEv("P2", 2*sec, 99, noFire),       // late, older than the span
			obsEv("P3", 5*sec, 1, noFire),        // unknown pin
		}},
		{"late observation inside the span fires at its own time", map[string]pinDef{
			"P1": {Range{Count: 3}, Sum, EveryValue}}, []ev{
			obsEv("P1", 10*sec, 1, 10*sec, 1),
			obsEv("P1", 30*sec, 3, 30*sec, 4),
			obsEv("P1", 20*sec, 2, 20*sec, 6),
		}},
		{"every_value mixed with every_minute", map[string]pinDef{
			"P1": fwd, "P2": {Range{Duration: 5 * min_}, Mean, EveryMinute}}, []ev{
			obsEv("P1", 10*sec, 1, noFire),
			obsEv("P2", 20*sec, 10, noFire), // timed pins only collect
			obsEv("P2", 40*sec, 20, noFire),
			tickEv(min_, min_, 1, 15),
			obsEv("P1", 70*sec, 2, 70*sec, 2, 15),
			obsEv("P2", 80*sec, 30, noFire),
			tickEv(90*sec, noFire), // not a boundary
			tickEv(2*min_, 2*min_, 2, 20),
		}},
		{"minute and hour pins: one firing at the hour", map[string]pinDef{
			"P1": {Range{Count: 10}, Sum, EveryMinute}, "P2": {Range{Count: 10}, Sum, EveryHour}}, []ev{
			obsEv("P1", 59*min_+30*sec, 1, noFire),
			obsEv("P2", 59*min_+40*sec, 5, noFire),
			tickEv(59*min_, noFire), // P1's window is empty as of 0:59; P2 not due
			tickEv(hr, hr, 1, 5),    // both due and emit
			obsEv("P1", hr+10*sec, 2, noFire),
			tickEv(hr+min_, hr+min_, 3, 5), // only P1 due; P2's value reused
		}},
		{"timed pin with an empty window does not fire", map[string]pinDef{
			"P1": {Range{Duration: min_}, Max, EveryMinute}}, []ev{
			obsEv("P1", 30*sec, 7, noFire),
			tickEv(min_, min_, 7),
			tickEv(2*min_, noFire), // (1:00, 2:00] is empty: no emission, no calculation
		}},
		{"boundaries are handled once, in order", map[string]pinDef{
			"P1": {Range{Count: 1}, Last, EveryMinute}}, []ev{
			obsEv("P1", 30*sec, 7, noFire),
			tickEv(min_, min_, 7),
			tickEv(min_, noFire), // again
			tickEv(0, noFire),    // earlier
			tickEv(2*min_, 2*min_, 7),
		}},
		{"quiet spell: the window as of the boundary", map[string]pinDef{
			"P1": {Range{Duration: 10 * min_}, Mean, EveryMinute}}, []ev{
			obsEv("P1", 0, 10, noFire),
			obsEv("P1", 5*min_, 20, noFire),
			tickEv(6*min_, 6*min_, 15),
			tickEv(10*min_, 10*min_, 20), // (0:00, 10:00]: the value at 0:00 left
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pins := map[string]*Pin{}
			for name, d := range c.pins {
				pins[name] = mustPin(t, d.r, d.a, d.tr)
			}
			calc, err := NewCalc(pins)
			if err != nil {
				t.Fatal(err)
			}
			names := slices.Sorted(func(yield func(string) bool) {
				for n := range c.pins {
					if !yield(n) {
						return
					}
				}
			})
			for i, e := range c.evs {
				var f Firing
				var ok bool
				if e.pin == "" {
					f, ok = calc.Tick(e.o.Time)
				} else {
					f, ok = calc.Observe(e.pin, e.o)
				}
				desc := fmt.Sprintf("event %d (%q at %v)", i, e.pin, e.o.Time.Sub(t0))
				if e.want == noFire {
					if ok {
						t.Fatalf("%s: fired at %v", desc, f.Time.Sub(t0))
					}
					continue
				}
				if !ok || !f.Time.Equal(at(e.want)) {
					t.Fatalf("%s: fired %v at %v, want at %v", desc, ok, f.Time.Sub(t0), e.want)
				}
				if got := calc.Values(names); !slices.Equal(got, e.vals) {
					t.Fatalf("%s: values %v, want %v", desc, got, e.vals)
				}
			}
		})
	}
}

func TestCalcValuesAndErrors(t *testing.T) {
	if _, err := NewCalc(nil); err == nil {
		t.Error("no pins accepted")
	}
	if _, err := NewCalc(map[string]*Pin{"P1": nil}); err == nil {
		t.Error("nil pin accepted")
	}
	p := mustPin(t, Range{Count: 1}, Max, EveryValue)
	calc, _ := NewCalc(map[string]*Pin{"relative_humidity": p, "temperature": mustPin(t, Range{Count: 1}, Max, EveryValue)})
	calc.Observe("relative_humidity", ob(0, 0.5))
	v := calc.Values([]string{"temperature", "relative_humidity", "pressure"})
	if !math.IsNaN(v[0]) || v[1] != 0.5 || !math.IsNaN(v[2]) {
		t.Errorf("Values: %v; want NaN for not emitted and absent pins", v)
	}
	if calc.Pin("relative_humidity") != p || calc.Pin("nope") != nil || calc.String() == "" {
		t.Error("Pin lookup")
	}
}

// TestRecomputeLoop runs the recompute loop of the package documentation:
// an observation exactly at a boundary counts in that boundary's window.
func TestRecomputeLoop(t *testing.T) {
	calc, _ := NewCalc(map[string]*Pin{"P1": mustPin(t, Range{Duration: min_}, Mean, EveryMinute)})
	history := []Observation{ob(30*sec, 1), ob(60*sec, 3), ob(90*sec, 5), ob(200*sec, 7)}
	var got []string
	write := func(f Firing) {
		got = append(got, fmt.Sprintf("%v=%g", f.Time.Sub(t0), calc.Values([]string{"P1"})[0]))
	}
	cursor := t0
	for _, o := range history {
		for b := range Boundaries(EveryMinute, cursor, o.Time.Add(-time.Nanosecond)) {
			if f, ok := calc.Tick(b); ok {
				write(f)
			}
		}
		cursor = o.Time.Add(-time.Nanosecond)
		if f, ok := calc.Observe("P1", o); ok {
			write(f)
		}
	}
	for b := range Boundaries(EveryMinute, cursor, at(4*min_)) {
		if f, ok := calc.Tick(b); ok {
			write(f)
		}
	}
	// (0,1m]: 1 and 3; (1m,2m]: 5; (2m,3m]: empty, nothing; (3m,4m]: 7.
	if want := []string{"1m0s=2", "2m0s=5", "4m0s=7"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
