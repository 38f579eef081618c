package window

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

// t0 is a Monday, midnight UTC.
var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func ob(d time.Duration, v float64) Observation { return Observation{Time: at(d), Value: v} }

const (
	sec  = time.Second
	min_ = time.Minute
	hr   = time.Hour
)

type add struct {
	o    Observation
	kept bool
}

// contents renders a window's observations as "offset=value" for readable
// comparisons.
func contents(obs []Observation) string {
	s := "["
	for i, o := range obs {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%v=%g", o.Time.Sub(t0), o.Value)
	}
	return s + "]"
}

func TestWindows(t *testing.T) {
	daily := Range{CronStart: "0 8 * * *", CronEnd: "0 18 * * *"}
	night := Range{CronStart: "0 22 * * *", CronEnd: "0 6 * * *"}
	cases := []struct {
		name string
		r    Range
		adds []add
		want string
	}{
		{"count: oldest dropped", Range{Count: 3}, []add{
			{ob(1*sec, 1), true}, {ob(2*sec, 2), true}, {ob(3*sec, 3), true}, {ob(4*sec, 4), true},
		}, "[2s=2 3s=3 4s=4]"},
		{"count: late inside inserted in place, oldest dropped", Range{Count: 3}, []add{
			{ob(1*sec, 1), true}, {ob(3*sec, 3), true}, {ob(5*sec, 5), true}, {ob(4*sec, 4), true},
		}, "[3s=3 4s=4 5s=5]"},
		{"count: late older than n-th newest dropped", Range{Count: 3}, []add{
			{ob(2*sec, 2), true}, {ob(3*sec, 3), true}, {ob(4*sec, 4), true}, {ob(1*sec, 1), false},
		}, "[2s=2 3s=3 4s=4]"},
		{"count: late kept while not full", Range{Count: 3}, []add{
			{ob(5*sec, 5), true}, {ob(1*sec, 1), true},
		}, "[1s=1 5s=5]"},
		{"count: same time replaces, also the oldest when full", Range{Count: 2}, []add{
			{ob(1*sec, 1), true}, {ob(2*sec, 2), true}, {ob(2*sec, 20), true}, {ob(1*sec, 10), true},
		}, "[1s=10 2s=20]"},
		{"count 1 forwards", Range{Count: 1}, []add{
			{ob(1*sec, 1), true}, {ob(2*sec, 2), true}, {ob(1*sec, 9), false},
		}, "[2s=2]"},
		{"count: NaN and Inf refused", Range{Count: 2}, []add{
			{ob(1*sec, math.NaN()), false}, {ob(2*sec, math.Inf(1)), false}, {ob(3*sec, 3), true},
		}, "[3s=3]"},

		{"time: (latest-d, latest], left edge exclusive", Range{Duration: 60 * sec}, []add{
			{ob(0, 0), true}, {ob(30*sec, 30), true}, {ob(60*sec, 60), true},
		}, "[30s=30 1m0s=60]"},
		{"time: one nanosecond inside the left edge stays", Range{Duration: 60 * sec}, []add{
			{ob(1, 0), true}, {ob(60*sec, 60), true},
		}, "[1ns=0 1m0s=60]"},
		{"time: late inside the span inserted in place", Range{Duration: 60 * sec}, []add{
			{ob(10*sec, 1), true}, {ob(50*sec, 3), true}, {ob(30*sec, 2), true},
		}, "[10s=1 30s=2 50s=3]"},
		{"time: late at the left edge dropped", Range{Duration: 60 * sec}, []add{
			{ob(70*sec, 7), true}, {ob(10*sec, 1), false}, {ob(11*sec, 2), true},
		}, "[11s=2 1m10s=7]"},
		{"time: late does not shrink the span", Range{Duration: 60 * sec}, []add{
			{ob(10*sec, 1), true}, {ob(65*sec, 6), true}, {ob(20*sec, 2), true},
		}, "[10s=1 20s=2 1m5s=6]"},
		{"time: same time replaces", Range{Duration: time.Hour}, []add{
			{ob(10*sec, 1), true}, {ob(20*sec, 2), true}, {ob(10*sec, 5), true},
		}, "[10s=5 20s=2]"},
		{"time: big jump empties all but the newest", Range{Duration: 60 * sec}, []add{
			{ob(1*sec, 1), true}, {ob(2*sec, 2), true}, {ob(hr, 3), true},
		}, "[1h0m0s=3]"},

		{"cron: period [08:00, 18:00)", daily, []add{
			{ob(7*hr+59*min_, 1), false}, // opens the previous day's period, in its gap: not kept
			{ob(8*hr, 2), true}, {ob(12*hr, 3), true}, {ob(18*hr-1, 4), true}, {ob(18*hr, 5), false},
		}, "[8h0m0s=2 12h0m0s=3 17h59m59.999999999s=4]"},
		{"cron: gap after the end keeps the finished period", daily, []add{
			{ob(9*hr, 1), true}, {ob(20*hr, 2), false}, {ob(24*hr+7*hr, 3), false},
		}, "[9h0m0s=1]"},
		{"cron: cleared at the next start", daily, []add{
			{ob(9*hr, 1), true}, {ob(17*hr, 2), true}, {ob(24*hr+8*hr, 3), true},
		}, "[32h0m0s=3]"},
		{"cron: cleared by a value in the next period's gap", daily, []add{
			{ob(9*hr, 1), true}, {ob(24*hr+19*hr, 3), false},
		}, "[]"},
		{"cron: late inside the period inserted, before its start dropped", daily, []add{
			{ob(10*hr, 2), true}, {ob(9*hr, 1), true}, {ob(7*hr, 0), false},
		}, "[9h0m0s=1 10h0m0s=2]"},
		{"cron: spanning midnight", night, []add{
			{ob(22*hr, 1), true}, {ob(23*hr+30*min_, 2), true}, {ob(24*hr+3*hr, 3), true},
			{ob(24*hr+6*hr, 4), false}, {ob(24*hr+21*hr, 5), false},
		}, "[22h0m0s=1 23h30m0s=2 27h0m0s=3]"},
		{"cron: spanning midnight, next night clears", night, []add{
			{ob(23*hr, 1), true}, {ob(24*hr+22*hr, 2), true},
		}, "[46h0m0s=2]"},
		{"cron: start hourly, end daily: cleared every hour", Range{CronStart: "0 * * * *", CronEnd: "0 0 * * *"}, []add{
			{ob(10*hr+5*min_, 1), true}, {ob(10*hr+55*min_, 2), true}, {ob(11*hr, 3), true},
		}, "[11h0m0s=3]"},
		{"cron: same start and end is one whole day", Range{CronStart: "0 0 * * *", CronEnd: "0 0 * * *"}, []add{
			{ob(0, 1), true}, {ob(24*hr-1, 2), true}, {ob(24*hr, 3), true},
		}, "[24h0m0s=3]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := NewWindow(c.r)
			if err != nil {
				t.Fatal(err)
			}
			for i, a := range c.adds {
				if got := w.Add(a.o); got != a.kept {
					t.Errorf("add %d (%v=%g): kept %v, want %v; window %s", i, a.o.Time.Sub(t0), a.o.Value, got, a.kept, contents(w.Observations()))
				}
			}
			if got := contents(w.Observations()); got != c.want {
				t.Errorf("contents %s, want %s", got, c.want)
			}
		})
	}
}

func TestObservationsAt(t *testing.T) {
	type q struct {
		t    time.Duration
		want string
	}
	cases := []struct {
		name string
		r    Range
		obs  []Observation
		qs   []q
	}{
		{"time: boundary after a quiet spell slides the window", Range{Duration: 15 * min_},
			[]Observation{ob(1*min_, 1), ob(5*min_, 5), ob(10*min_, 10)},
			[]q{
				{10 * min_, "[1m0s=1 5m0s=5 10m0s=10]"},
				{16 * min_, "[5m0s=5 10m0s=10]"}, // (1m, 16m]: 1m is at the open edge
				{20 * min_, "[10m0s=10]"},
				{25 * min_, "[]"},
				{7 * min_, "[1m0s=1 5m0s=5]"}, // newer data excluded
				{0, "[]"},
			}},
		{"count: the n newest at or before t", Range{Count: 3},
			[]Observation{ob(1*sec, 1), ob(2*sec, 2), ob(3*sec, 3)},
			[]q{{3 * sec, "[1s=1 2s=2 3s=3]"}, {hr, "[1s=1 2s=2 3s=3]"}, {2 * sec, "[1s=1 2s=2]"}, {0, "[]"}},
		},
		{"cron: period, completed period in the gap, cleared at next start", Range{CronStart: "0 8 * * *", CronEnd: "0 18 * * *"},
			[]Observation{ob(8*hr, 1), ob(9*hr, 2)},
			[]q{
				{8 * hr, "[8h0m0s=1]"},
				{8*hr + 30*min_, "[8h0m0s=1]"},
				{hr * 19, "[8h0m0s=1 9h0m0s=2]"}, // after the end: the completed period
				{24*hr + 7*hr, "[8h0m0s=1 9h0m0s=2]"},
				{24*hr + 8*hr, "[]"}, // the next start point clears it
				{7 * hr, "[]"},       // an earlier period this window no longer has
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := NewWindow(c.r)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range c.obs {
				if !w.Add(o) {
					t.Fatalf("%v not kept", o)
				}
			}
			for _, q := range c.qs {
				if got := contents(w.ObservationsAt(at(q.t))); got != q.want {
					t.Errorf("as of %v: %s, want %s", q.t, got, q.want)
				}
			}
		})
	}
}

// Times in other locations and with monotonic readings compare by instant.
func TestWindowNormalisesTime(t *testing.T) {
	w, _ := NewWindow(Range{Count: 2})
	berlin := time.FixedZone("CET", 3600)
	w.Add(Observation{Time: at(hr).In(berlin), Value: 1})
	w.Add(Observation{Time: at(hr), Value: 2}) // same instant: replaces
	obs := w.Observations()
	if len(obs) != 1 || obs[0].Value != 2 || obs[0].Time.Location() != time.UTC {
		t.Fatalf("got %s in %v", contents(obs), obs[0].Time.Location())
	}
	now := time.Now()
	w.Add(Observation{Time: now, Value: 3})
	w.Add(Observation{Time: now.Round(0), Value: 4})
	if n := len(w.Observations()); n != 2 || w.Observations()[1].Value != 4 {
		t.Fatalf("monotonic and wall reading of one instant differ: %v", w.Observations())
	}
}

// A long random run with late data against a naive model: the windows keep
// what the model keeps, and a count window never grows its buffer.
func TestWindowsAgainstModel(t *testing.T) {
	for _, r := range []Range{{Count: 1}, {Count: 10}, {Count: 14}, {Count: 15}, {Count: 37}, {Count: 100}, {Duration: 45 * sec}} {
		w, _ := newWin(r)
		var model []Observation
		seed := uint32(1)
		rnd := func(n int) int { seed = seed*1664525 + 1013904223; return int(seed>>8) % n }
		latest := time.Duration(0)
		capFirst := -1
		for i := 0; i < 20000; i++ {
			d := latest + time.Duration(rnd(3000))*time.Millisecond
			if rnd(5) == 0 {
				d = latest - time.Duration(rnd(60000))*time.Millisecond // late
			}
			o := ob(d, float64(i))
			kept := w.Add(o)
			model, latest = modelAdd(model, r, o, kept, latest)
			if got, want := contents(w.obs()), contents(model); got != want {
				t.Fatalf("%+v step %d: window %s, model %s", r, i, got, want)
			}
			if r.Count > 0 {
				if capFirst < 0 && w.buf != nil {
					capFirst = cap(w.buf)
				}
				if cap(w.buf) != capFirst {
					t.Fatalf("count window grew from %d to %d", capFirst, cap(w.buf))
				}
			}
		}
	}
}

// modelAdd is the naive specification: insert, sort, trim.
func modelAdd(m []Observation, r Range, o Observation, kept bool, latest time.Duration) ([]Observation, time.Duration) {
	i := slices.IndexFunc(m, func(x Observation) bool { return x.Time.Equal(o.Time) })
	wantKept := true
	switch {
	case i >= 0:
	case r.Count > 0:
		wantKept = len(m) < r.Count || o.Time.After(m[0].Time)
	default:
		wantKept = len(m) == 0 || o.Time.After(at(latest).Add(-r.Duration))
	}
	if kept != wantKept {
		panic(fmt.Sprintf("kept %v, model says %v for %v", kept, wantKept, o.Time.Sub(t0)))
	}
	if !kept {
		return m, latest
	}
	if i >= 0 {
		m[i].Value = o.Value
	} else {
		m = append(m, o)
		slices.SortFunc(m, func(a, b Observation) int { return a.Time.Compare(b.Time) })
	}
	if d := o.Time.Sub(t0); len(m) == 1 || d > latest {
		latest = d
	}
	if r.Count > 0 && len(m) > r.Count {
		m = m[len(m)-r.Count:]
	}
	if r.Duration > 0 {
		m = slices.DeleteFunc(m, func(x Observation) bool { return !x.Time.After(at(latest).Add(-r.Duration)) })
	}
	return m, latest
}

// A burst grows a time window's buffer; once the data has left the span the
// memory is given back. MaxObservations caps a window whatever its span.
func TestTimeWindowMemory(t *testing.T) {
	w, _ := newWin(Range{Duration: hr})
	for i := range 5000 {
		w.Add(ob(time.Duration(i)*time.Millisecond, 1))
	}
	if w.len() != 5000 || cap(w.buf) < 5000 {
		t.Fatalf("len %d cap %d", w.len(), cap(w.buf))
	}
	for i := range 10 {
		w.Add(ob(2*hr+time.Duration(i)*min_, 2))
	}
	if w.len() != 10 || cap(w.buf) > 64 {
		t.Fatalf("after the burst left: len %d cap %d", w.len(), cap(w.buf))
	}
	if got := contents(w.obs()[:2]); got != "[2h0m0s=2 2h1m0s=2]" {
		t.Fatalf("contents %s", got)
	}

	w, _ = newWin(Range{Duration: MaxDuration})
	for i := range MaxObservations + 10 {
		w.Add(ob(time.Duration(i)*sec, float64(i)))
	}
	if obs := w.obs(); len(obs) != MaxObservations || obs[0].Value != 10 {
		t.Fatalf("len %d, oldest %v: want the %d newest", len(obs), obs[0].Value, MaxObservations)
	}
}
