package clock

import (
	"slices"
	"testing"
	"time"
)

// A fake clock's timers fire when it passes them, in time order, once;
// a stopped one never fires.
func TestFakeFiresTimersItPasses(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	c := NewFake(t0)
	var fired []string
	c.AfterFunc(2*time.Minute, func() { fired = append(fired, "b") })
	c.AfterFunc(time.Minute, func() { fired = append(fired, "a") })
	stop := c.AfterFunc(90*time.Second, func() { fired = append(fired, "stopped") })
	c.AfterFunc(time.Hour, func() { fired = append(fired, "later") })
	if !stop() || stop() {
		t.Error("stop reports true once, for the call it stopped")
	}
	c.Advance(30 * time.Second)
	if len(fired) != 0 {
		t.Fatalf("fired %v before any timer was due", fired)
	}
	c.Set(t0.Add(5 * time.Minute))
	c.Set(t0.Add(6 * time.Minute))
	if !slices.Equal(fired, []string{"a", "b"}) || c.Armed() != 1 {
		t.Errorf("fired %v with %d armed, want a, b with the hour's one armed", fired, c.Armed())
	}
	if !c.Now().Equal(t0.Add(6 * time.Minute)) {
		t.Errorf("now %s", c.Now())
	}
}
