package window

import (
	"math"
	"time"
)

// Observation is one value at one event time. It is the package's own,
// smaller than pipeline.Observation: a window holds many and needs neither
// project nor dataPointID.
type Observation struct {
	Time  time.Time
	Value float64
}

// Window is a pin's data_range over event time (see the package
// documentation for the spans). Implementations are not safe for
// concurrent use: each belongs to one actor.
type Window interface {
	// Add stores o in event-time order. It reports false when o is not
	// kept: older than the window's span, in a cron window's gap between an
	// end point and the next start point, or a NaN or infinite value.
	Add(o Observation) bool
	// Observations is the current contents in event-time order: the window
	// as of its newest observation. The slice is a read-only view, valid
	// until the next Add.
	Observations() []Observation
	// ObservationsAt is the window as of event time t, the view a timed
	// trigger at boundary t evaluates. Read-only, valid until the next Add.
	ObservationsAt(t time.Time) []Observation
}

// NewWindow builds the window of a Range.
func NewWindow(r Range) (Window, error) {
	w, err := newWin(r)
	if err != nil {
		return nil, err
	}
	return &w, nil
}

type kind uint8

const (
	kindCount kind = iota
	kindTime
	kindCron
)

// win implements all three kinds in one struct, so a Pin embeds its window
// by value (one allocation less per pin, no interface call per
// observation); the kinds differ only in which observations they keep.
type win struct {
	buffer
	kind kind
	n    int           // count window: capacity in observations
	d    time.Duration // time window: length
	cron *cronState    // cron window only; a pointer keeps win small for the common kinds
}

type cronState struct {
	startExpr, endExpr string
	cur                period
	set                bool // cur is valid: an observation has opened a period
}

func newWin(r Range) (win, error) {
	if err := r.validate(); err != nil {
		return win{}, err
	}
	switch {
	case r.Count > 0:
		return win{kind: kindCount, n: r.Count}, nil
	case r.Duration > 0:
		return win{kind: kindTime, d: r.Duration}, nil
	}
	start, _ := parseCron("data_range.start", r.CronStart)
	end, _ := parseCron("data_range.end", r.CronEnd)
	return win{kind: kindCron, cron: &cronState{startExpr: start, endExpr: end}}, nil
}

func (w *win) Observations() []Observation { return w.obs() }

func (w *win) Add(o Observation) bool {
	if math.IsNaN(o.Value) || math.IsInf(o.Value, 0) {
		// An aggregate over a NaN is NaN for ever after (sum, mean); the
		// pipeline refuses such values, this is a second line.
		return false
	}
	// UTC drops the location and the monotonic reading, so instants compare
	// by wall time alone (a time.Now() and its round trip through a
	// database are then equal) and the slots hold no pointers.
	o.Time = o.Time.UTC()
	switch w.kind {
	case kindCount:
		return w.addCount(o)
	case kindTime:
		return w.addTime(o)
	}
	return w.addCron(o)
}

// addCount keeps the n newest observations.
func (w *win) addCount(o Observation) bool {
	if w.buf == nil {
		// Allocated once and never grown: n plus a slack of at least 2, so
		// the dead prefix is reclaimed by one copy every slack observations.
		// The slack is the least that buffer.insert compacts rather than
		// grows (a seventh of n: an eighth of n plus slack). Ten thousand
		// running datapoints hold these slots; a copy of a few hundred
		// bytes every other observation is cheaper than the memory.
		w.buf = make([]Observation, 0, w.n+countSlack(w.n))
	}
	i := w.search(o.Time)
	if i < w.len() && w.buf[w.head+i].Time.Equal(o.Time) {
		w.buf[w.head+i].Value = o.Value
		return true
	}
	if w.len() == w.n {
		if i == 0 {
			return false // older than the n-th newest
		}
		w.dropOldest(1)
		i--
	}
	w.insert(i, o)
	return true
}

func countSlack(n int) int { return max(2, (n+6)/7) }

// addTime keeps the observations in (latest-d, latest].
func (w *win) addTime(o Observation) bool {
	if n := w.len(); n > 0 {
		latest := w.buf[len(w.buf)-1].Time
		if !o.Time.After(latest.Add(-w.d)) {
			return false // at or before the left edge of the span
		}
	}
	if w.put(o) == w.len()-1 {
		// o is the newest: the span moves on. Evicting only here keeps a
		// late observation from shrinking the span.
		w.dropOldest(w.countUpTo(o.Time.Add(-w.d)))
		w.shrink()
	}
	w.limit()
	return true
}

// addCron keeps the observations of the current cron period.
func (w *win) addCron(o Observation) bool {
	c := w.cron
	if !c.set || !o.Time.Before(c.cur.next) {
		// A new period (or the first): the next start point has passed, so
		// the window is cleared whether or not o falls inside the period's
		// [start, end).
		p, err := periodAt(c.startExpr, c.endExpr, o.Time)
		if err != nil {
			return false // ParseRange checked the schedules; cannot happen in practice
		}
		c.cur, c.set = p, true
		w.clear()
		w.shrink()
	}
	if !c.cur.collects(o.Time) {
		return false // before the period (late) or in the gap after its end
	}
	w.put(o)
	w.limit()
	return true
}

// clearsAt reports whether adding an observation at t empties the window
// first: in a cron window, t at or after the next start point. Only then
// does an observation that is not kept change the window.
func (w *win) clearsAt(t time.Time) bool {
	return w.kind == kindCron && w.cron.set && !t.UTC().Before(w.cron.cur.next)
}

// limit enforces MaxObservations on time and cron windows: the oldest go,
// which keeps a burst from taking unbounded memory.
func (w *win) limit() {
	if over := w.len() - MaxObservations; over > 0 {
		w.dropOldest(over)
	}
}

func (w *win) ObservationsAt(t time.Time) []Observation {
	t = t.UTC()
	hi := w.after(t)
	switch w.kind {
	case kindCount:
		// The n newest at or before t; the buffer never holds more than n.
		return w.buf[w.head : w.head+hi : w.head+hi]
	case kindTime:
		lo := w.after(t.Add(-w.d))
		return w.buf[w.head+lo : w.head+hi : w.head+hi]
	}
	c := w.cron
	if !c.set || !c.cur.contains(t) {
		// t is in a later period (the window as of t is cleared: nothing has
		// arrived since its start point) or in an earlier one, whose
		// observations this window no longer has.
		return nil
	}
	return w.buf[w.head : w.head+hi : w.head+hi]
}

// evalTime is the time up to which the window as of t lasts, for
// timeweighted_mean's last weight: t itself, except that a cron period ends
// at its end point, so a trigger after the end weighs the newest value only
// up to the end, as the data stops counting there.
func (w *win) evalTime(t time.Time) time.Time {
	if w.kind == kindCron && w.cron.set && w.cron.cur.contains(t) && t.After(w.cron.cur.end) {
		return w.cron.cur.end
	}
	return t
}
