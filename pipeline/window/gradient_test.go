package window

import (
	"math"
	"testing"
	"time"
)

func TestGradient(t *testing.T) {
	type in struct {
		o    Observation
		want float64
		ok   bool
	}
	unix := time.Unix(1_700_000_000, 0).UTC()
	cases := []struct {
		name   string
		factor float64
		ins    []in
	}{
		{"first output after two inputs", 1, []in{
			{ob(0, 10), 0, false},
			{ob(10*sec, 30), 2, true},    // (30-10)/(10-0)
			{ob(20*sec, 25), -0.5, true}, // (25-30)/(20-10)
		}},
		{"factorization per minute", 60, []in{
			{ob(0, 1), 0, false}, {ob(30*sec, 2), 2, true}, // 1/30 per s · 60
		}},
		{"same time replaces the latest and emits again", 1, []in{
			{ob(0, 0), 0, false},
			{ob(4*sec, 8), 2, true},
			{ob(4*sec, 4), 1, true}, // (4-0)/(4-0) with the replaced value
			{ob(8*sec, 8), 1, true}, // (8-4)/(8-4)
		}},
		{"same time before a second input: no output", 1, []in{
			{ob(0, 1), 0, false}, {ob(0, 5), 0, false}, {ob(sec, 6), 1, true},
		}},
		{"out of order ignored", 1, []in{
			{ob(10*sec, 1), 0, false}, {ob(20*sec, 3), 0.2, true},
			{ob(15*sec, 100), 0, false},
			{ob(30*sec, 4), 0.1, true}, // against 20 s, not 15 s
		}},
		{"NaN ignored", 1, []in{
			{ob(0, 1), 0, false}, {ob(sec, math.NaN()), 0, false}, {ob(2*sec, 3), 1, true},
		}},
		{"nanoseconds at today's unix times", 1, []in{
			{Observation{unix, 0}, 0, false},
			{Observation{unix.Add(time.Millisecond), 1}, 1000, true},
			{Observation{unix.Add(time.Millisecond + time.Microsecond), 1.5}, 500000, true},
		}},
		{"zero factor", 0, []in{{ob(0, 1), 0, false}, {ob(sec, 2), 0, true}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := Gradient{Factor: c.factor}
			for i, x := range c.ins {
				got, ok := g.Observe(x.o)
				if ok != x.ok || math.Abs(got-x.want) > 1e-9*math.Max(1, math.Abs(x.want)) {
					t.Fatalf("input %d: %v, %v; want %v, %v", i, got, ok, x.want, x.ok)
				}
			}
		})
	}
	if DefaultFactorization != 1 {
		t.Fatal("api.md 2.11: factorization defaults to 1")
	}
}
