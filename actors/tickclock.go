package actors

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/openbdp/bdp/clock"
)

// tickClock wakes the actors with timed triggers at their boundaries with
// one timer for the engine, not one per actor. Timed triggers fire at
// whole UTC minutes and hours, so the actors waiting share a handful of
// boundaries: 100,000 every_minute datapoints are one list under one
// time, sent their ticks by one goroutine, instead of 100,000 timers (a
// runtime timer and a closure each on the heap) whose callbacks start
// 100,000 goroutines on the minute.
//
// A tick may reach an actor that no longer waits for it (it was stopped,
// restarted or woken again for another boundary): the actor keeps the
// boundary it waits for and ignores any other (vdpActor.nextTick).
type tickClock struct {
	clock clock.Clock
	send  func(pid *actor.PID, t *tick)
	// pace waits while the engine is behind with the ticks sent before.
	pace func()
	rate int // ticks a second at most; 0 for no limit

	mu        sync.Mutex
	due       map[time.Time][]*actor.PID // boundary -> the actors waiting for it
	armed     time.Time                  // the boundary the timer is set for; zero for none
	stopTimer func() bool                // the armed timer's; nil for none
	stopped   bool
}

func newTickClock(clk clock.Clock, send func(*actor.PID, *tick), pace func(), rate int) *tickClock {
	return &tickClock{clock: clk, send: send, pace: pace, rate: rate, due: map[time.Time][]*actor.PID{}}
}

// tickTranche is how many ticks go out between two calls of pace.
const tickTranche = 256

// wake sends pid a tick at boundary at (at once if it is past).
func (c *tickClock) wake(pid *actor.PID, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.due[at] = append(c.due[at], pid)
	if c.armed.IsZero() || at.Before(c.armed) {
		c.arm(at)
	}
}

// arm sets the timer for boundary at, replacing the one set before.
// Called with mu held.
func (c *tickClock) arm(at time.Time) {
	if c.stopTimer != nil {
		c.stopTimer()
	}
	c.armed = at
	c.stopTimer = c.clock.AfterFunc(at.Sub(c.clock.Now()), func() { c.fire(at) })
}

// fire sends the ticks of every boundary up to at, when the timer set for
// at goes off, and sets the timer for the next boundary. A timer replaced
// while its callback was starting finds another boundary armed and does
// nothing.
func (c *tickClock) fire(at time.Time) {
	c.mu.Lock()
	if c.stopped || !c.armed.Equal(at) {
		c.mu.Unlock()
		return
	}
	type ready struct {
		at   time.Time
		pids []*actor.PID
	}
	var fired []ready
	var next time.Time
	for b, pids := range c.due {
		if !b.After(at) {
			fired = append(fired, ready{b, pids})
			delete(c.due, b)
		} else if next.IsZero() || b.Before(next) {
			next = b
		}
	}
	c.armed, c.stopTimer = time.Time{}, nil
	if !next.IsZero() {
		c.arm(next)
	}
	c.mu.Unlock()
	// Sent outside the lock: 100,000 sends should not hold up an actor
	// asking to be woken. Sent in tranches at the pace the engine takes
	// them: at once, the ticks of 100,000 every_minute datapoints queued
	// more mailboxes than the dispatcher's workers take, each of the rest
	// got a goroutine of its own, and tens of thousands of goroutines
	// calculating at once starved the pipeline: ingestion fell to a
	// quarter of its rate in the second after the minute. Even at the
	// workers' pace, the outputs of 100,000 ticks in one second halved
	// ingestion: with a rate, their cost spreads over seconds.
	began, sent := time.Now(), 0
	for _, r := range fired {
		t := &tick{at: r.at}
		for _, pid := range r.pids {
			if sent > 0 && sent%tickTranche == 0 {
				c.pace()
				if c.rate > 0 {
					time.Sleep(time.Until(began.Add(time.Duration(sent) * time.Second / time.Duration(c.rate))))
				}
				if c.isStopped() {
					return
				}
			}
			c.send(pid, t)
			sent++
		}
	}
}

func (c *tickClock) isStopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

// stop ends the clock: no tick is sent after it returns but those already
// being sent.
func (c *tickClock) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.stopTimer != nil {
		c.stopTimer()
	}
	clear(c.due)
}
