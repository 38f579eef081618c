package window

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Firing tells the caller to run the calculation now and write its result
// at Time (decisions.md 5): the triggering observation's time for
// every_value, the minute or hour boundary for the timed triggers.
type Firing struct {
	Time time.Time
}

// Calc holds the pins of one virtual datapoint and decides when its
// calculation runs (decisions.md 5): whenever any pin's trigger fires and
// that pin emits, using the latest emitted value of every pin, and only once
// every pin has emitted at least once. What the calculation computes
// (formula, gradient, humidity) is the caller's. Not safe for concurrent
// use: it belongs to one actor.
type Calc struct {
	names    []string // sorted; a linear scan of at most five beats a map in time and memory
	pins     []*Pin
	lastTick time.Time // newest boundary handled by Tick
}

// NewCalc builds a calculation over named pins.
func NewCalc(pins map[string]*Pin) (*Calc, error) {
	if len(pins) == 0 {
		return nil, fieldErr("pins", "at least one pin is required")
	}
	c := &Calc{names: make([]string, 0, len(pins)), pins: make([]*Pin, 0, len(pins))}
	for name := range pins {
		c.names = append(c.names, name)
	}
	slices.Sort(c.names)
	for _, name := range c.names {
		p := pins[name]
		if p == nil {
			return nil, fieldErr("pins."+name, "is nil")
		}
		c.pins = append(c.pins, p)
	}
	return c, nil
}

// Pin is the pin of that name, nil if there is none.
func (c *Calc) Pin(name string) *Pin {
	if i := slices.Index(c.names, name); i >= 0 {
		return c.pins[i]
	}
	return nil
}

// Observe feeds an observation of one pin's source. It returns a Firing at
// o's time when that pin is every_value, kept o and emitted, and every pin
// has emitted. A late observation fires at its own (earlier) time; the
// result then replaces whatever the store holds at that time (decisions.md
// 4). An unknown pin name is ignored.
func (c *Calc) Observe(pin string, o Observation) (Firing, bool) {
	p := c.Pin(pin)
	if p == nil || !p.Observe(o) || !c.ready() {
		return Firing{}, false
	}
	return Firing{Time: o.Time.UTC()}, true
}

// Fill refills one pin's window with stored history (Pin.Fill): the pins
// end as Observe of each observation would leave them, but no calculation
// runs. An unknown pin name is ignored.
func (c *Calc) Fill(pin string, obs []Observation) {
	if p := c.Pin(pin); p != nil {
		p.Fill(obs)
	}
}

// Tick fires the timed pins due at boundary b (Trigger.Due: every_minute
// pins at each whole minute, every_hour pins at each whole hour). It
// returns a Firing at b when at least one of them emitted and every pin has
// emitted. A pin whose window is empty as of b does not emit; if no pin
// emits, nothing is calculated, so a quiet source does not repeat stale
// results. Boundaries must come in increasing order: one at or before the
// newest boundary handled is ignored, so a timer that fires twice (or a
// recompute that overlaps the live run) does not write twice.
func (c *Calc) Tick(b time.Time) (Firing, bool) {
	b = b.UTC()
	if !c.lastTick.IsZero() && !b.After(c.lastTick) {
		return Firing{}, false
	}
	due, fired := false, false
	for _, p := range c.pins {
		if p.trig.Due(b) {
			due = true
			if p.Fire(b) {
				fired = true
			}
		}
	}
	if due {
		c.lastTick = b
	}
	if !fired || !c.ready() {
		return Firing{}, false
	}
	return Firing{Time: b}, true
}

// ready reports whether every pin has emitted at least once.
func (c *Calc) ready() bool {
	for _, p := range c.pins {
		if !p.emitted {
			return false
		}
	}
	return true
}

// Values is the latest emitted value of each named pin, in the order given.
// A name without a pin (such as an absent optional pressure pin) or a pin
// that has not emitted yields NaN, which AbsoluteHumidity reads as "no
// pressure pin".
func (c *Calc) Values(names []string) []float64 { return c.AppendValues(nil, names) }

// AppendValues appends what Values returns to dst: a caller calculating on
// every observation reuses one slice instead of making one each time.
func (c *Calc) AppendValues(dst []float64, names []string) []float64 {
	for _, name := range names {
		v := math.NaN()
		if p := c.Pin(name); p != nil && p.emitted {
			v = p.value
		}
		dst = append(dst, v)
	}
	return dst
}

// Names are the pins' names, sorted. The slice is the Calc's own: a
// caller that evaluates over all pins keeps it instead of a copy per
// virtual datapoint. Read-only.
func (c *Calc) Names() []string { return c.names }

func (c *Calc) String() string { return fmt.Sprintf("calc%v", c.names) }
