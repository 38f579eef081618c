package window

import (
	"fmt"
	"time"

	"github.com/adhocore/gronx"
)

// period is one cron window period: [start, end) holds observations; at
// next (the following start point) the window is cleared. end may lie after
// next when the end schedule is sparser than the start schedule (start
// hourly, end daily): then next wins, since the window is cleared at every
// start point.
type period struct {
	start, end, next time.Time
}

// contains reports whether t is between start (inclusive) and the next
// start point (exclusive): the times whose "latest start point" is start.
func (p *period) contains(t time.Time) bool {
	return !t.Before(p.start) && t.Before(p.next)
}

// collects reports whether an observation at t belongs to the period's
// window: at or after start, before end and before the next start.
func (p *period) collects(t time.Time) bool {
	return p.contains(t) && t.Before(p.end)
}

// periodAt computes the period whose start is the latest start point at or
// before t. Cron points are whole minutes in UTC. It costs some
// microseconds (gronx walks the calendar), so windows call it only when an
// observation leaves the current period, not per observation.
func periodAt(startExpr, endExpr string, t time.Time) (period, error) {
	t = t.UTC()
	s, err := gronx.PrevTickBefore(startExpr, t, true)
	if err != nil {
		return period{}, fmt.Errorf("cron start %q before %s: %w", startExpr, t, err)
	}
	// gronx truncates to the second; start points are whole minutes, so
	// truncating to the minute is exact and drops any fraction it kept.
	s = s.UTC().Truncate(time.Minute)
	e, err := gronx.NextTickAfter(endExpr, s, false)
	if err != nil {
		return period{}, fmt.Errorf("cron end %q after %s: %w", endExpr, s, err)
	}
	n, err := gronx.NextTickAfter(startExpr, s, false)
	if err != nil {
		return period{}, fmt.Errorf("cron start %q after %s: %w", startExpr, s, err)
	}
	p := period{start: s, end: e.UTC().Truncate(time.Minute), next: n.UTC().Truncate(time.Minute)}
	// Guard against a library answer that breaks the invariants the window
	// relies on; a wrong period would silently mix data of two periods.
	if s.After(t) || !p.end.After(s) || !p.next.After(t) {
		return period{}, fmt.Errorf("cron %q/%q: inconsistent period %v for %s", startExpr, endExpr, p, t)
	}
	return p, nil
}
