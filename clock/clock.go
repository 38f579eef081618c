// Package clock is the time of bdp's parts that wait: Now, and a timer
// that calls a function once a duration has passed. Production code takes
// a Clock (Real by default); tests inject a Fake and move it by hand, so
// that they neither sleep nor wait for the wall clock.
package clock

import (
	"slices"
	"sync"
	"time"
)

// Clock tells the time and calls back after a duration.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once d has passed, unless stopped; stop reports
	// whether it stopped the call.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Real is the wall clock.
type Real struct{}

func (Real) Now() time.Time { return time.Now() }

func (Real) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Fake is a clock a test moves by hand (Set, Advance); its timers fire,
// in time order, on the goroutine that moves it past them. Safe for
// concurrent use.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

// NewFake returns a fake clock reading now.
func NewFake(now time.Time) *Fake { return &Fake{now: now} }

func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *Fake) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// Advance moves the clock d on; see Set.
func (c *Fake) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to at and fires the timers due, in time order.
func (c *Fake) Set(at time.Time) {
	c.mu.Lock()
	c.now = at
	var due, rest []*fakeTimer
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(at):
			t.stopped = true
			due = append(due, t)
		default:
			rest = append(rest, t)
		}
	}
	c.timers = rest
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *fakeTimer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.f()
	}
}

// Armed counts the timers neither fired nor stopped.
func (c *Fake) Armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

// Pending is when each armed timer is due, earliest first.
func (c *Fake) Pending() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var due []time.Time
	for _, t := range c.timers {
		if !t.stopped {
			due = append(due, t.at)
		}
	}
	slices.SortFunc(due, time.Time.Compare)
	return due
}

// Timer is time.Timer on a Clock: C receives the clock's time once the
// duration has passed, unless Stop comes first.
type Timer struct {
	C    <-chan time.Time
	Stop func() bool
}

// NewTimer arms a Timer on c for d.
func NewTimer(c Clock, d time.Duration) Timer {
	fired := make(chan time.Time, 1) // the callback never blocks
	stop := c.AfterFunc(d, func() { fired <- c.Now() })
	return Timer{C: fired, Stop: stop}
}

// Func is a clock whose Now is now and whose timers are the wall clock's:
// the platform's time moved by an offset, say, or stood still, where a
// test needs no timer to fire on its word.
type Func func() time.Time

func (f Func) Now() time.Time { return f() }

func (Func) AfterFunc(d time.Duration, fn func()) func() bool { return time.AfterFunc(d, fn).Stop }
