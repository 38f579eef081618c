package bench

import (
	"strings"
	"testing"
	"time"
)

func TestParseProcStatCPU(t *testing.T) {
	// utime 1234 and stime 56 ticks; the command name holds a space and
	// a parenthesis, which must not shift the fields.
	const tail = " S 1 2 3 0 -1 4194560 100 0 0 0 1234 56 0 0 20 0 12 0 100 2000000 500"
	cases := []struct {
		name string
		stat string
		want time.Duration
		err  string
	}{
		{"plain", "4242 (bdp)" + tail, 12900 * time.Millisecond, ""},
		{"odd command name", "4242 (bdp (x) y)" + tail, 12900 * time.Millisecond, ""},
		{"no command name", "4242 bdp S 1", 0, "no command name"},
		{"truncated", "4242 (bdp) S 1 2 3", 0, "fields after the command name"},
		{"not a number", "4242 (bdp) S 1 2 3 0 -1 4194560 100 0 0 0 x 56 0", 0, "invalid syntax"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseProcStatCPU([]byte(c.stat))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestFarScheduleHasNoBoundaryWithinTwoDays(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC) // a Tuesday
	if got, want := farSchedule(now), `[{"day":"friday","start":"08:00","end":"12:00","value":21}]`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
