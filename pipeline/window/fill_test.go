package window

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// Fill must leave a pin exactly as Observe of each observation does: the
// same window contents and the same emitted value, for every kind of
// window and every aggregate, with late and duplicate times mixed in, and
// for a cron window whose history crosses start points and gaps.
func TestFillEqualsObserveOneByOne(t *testing.T) {
	ranges := []struct {
		name string
		r    Range
	}{
		{"count1", Range{Count: 1}},
		{"count7", Range{Count: 7}},
		{"count200", Range{Count: 200}},
		{"time90s", Range{Duration: 90 * sec}},
		{"time1h", Range{Duration: hr}},
		{"cron", Range{CronStart: "0,20,40 * * * *", CronEnd: "10,30,50 * * * *"}},
	}
	aggs := []Aggregate{Last, First, Sum, Mean, Median, Max, Min, TimeWeightedMean, Integral}
	for _, rg := range ranges {
		for _, a := range aggs {
			for _, trig := range []Trigger{EveryValue, EveryMinute} {
				t.Run(fmt.Sprintf("%s/%s/%s", rg.name, a, trig), func(t *testing.T) {
					for seed := range uint64(5) {
						obs := fillHistory(seed, 300)
						one, all := mustPin(t, rg.r, a, trig), mustPin(t, rg.r, a, trig)
						for _, o := range obs {
							one.Observe(o)
						}
						all.Fill(obs)
						samePin(t, one, all)
						// The pins go on alike afterwards too.
						next := Observation{Time: obs[len(obs)-1].Time.Add(7 * sec), Value: 3}
						if f1, f2 := one.Observe(next), all.Observe(next); f1 != f2 {
							t.Fatalf("seed %d: Observe after the fill fired %v, one by one %v", seed, f2, f1)
						}
						samePin(t, one, all)
					}
				})
			}
		}
	}
}

// fillHistory is mostly ascending data with every tenth observation late
// and some on a time already seen, and now and then a jump of 25 minutes.
func fillHistory(seed uint64, n int) []Observation {
	rng := rand.New(rand.NewPCG(seed, 7))
	obs := make([]Observation, 0, n)
	at := t0
	for i := 0; i < n; i++ {
		at = at.Add(time.Duration(1+rng.IntN(40)) * sec)
		o := Observation{Time: at, Value: float64(rng.IntN(1000)) / 4}
		if i%50 == 49 {
			at = at.Add(25 * min_) // a cron window skips a period and lands in a gap
		}
		switch i % 10 {
		case 3:
			o.Time = at.Add(-time.Duration(rng.IntN(120)) * sec)
		case 7:
			o.Time = obs[len(obs)-1].Time
		}
		obs = append(obs, o)
	}
	// The history ends in a cron gap: a new period opens and clears the
	// window, and the observation is not kept (xx:35 after a start at xx:20
	// and an end at xx:30).
	gap := at.Add(20 * min_).Truncate(hr).Add(35 * min_)
	if gap.Before(at.Add(20 * min_)) {
		gap = gap.Add(hr)
	}
	return append(obs, Observation{Time: gap, Value: 1})
}

func samePin(t *testing.T, want, got *Pin) {
	t.Helper()
	wv, wok := want.Emitted()
	gv, gok := got.Emitted()
	if wok != gok || wv != gv {
		t.Fatalf("emitted %v (%v) after Fill, %v (%v) one by one", gv, gok, wv, wok)
	}
	w, g := want.Window().Observations(), got.Window().Observations()
	if len(w) != len(g) {
		t.Fatalf("window holds %d after Fill, %d one by one", len(g), len(w))
	}
	for i := range w {
		if !w[i].Time.Equal(g[i].Time) || w[i].Value != g[i].Value {
			t.Fatalf("window[%d] = %v after Fill, %v one by one", i, g[i], w[i])
		}
	}
}

// BenchmarkRefillMedian refills a count-100,000 median window with its
// history: Fill against one Observe per observation, the way a window was
// refilled before Fill existed.
func BenchmarkRefillMedian(b *testing.B) {
	const n = 100_000
	obs := make([]Observation, n)
	for i := range obs {
		obs[i] = ob(time.Duration(i)*sec, float64((i*7919)%1000))
	}
	b.Run("fill", func(b *testing.B) {
		for b.Loop() {
			p := mustPin(b, Range{Count: n}, Median, EveryValue)
			p.Fill(obs)
		}
	})
	b.Run("observe-each/n=10000", func(b *testing.B) {
		// One by one is quadratic: a tenth of the window already takes a
		// while, the whole one 14 s.
		for b.Loop() {
			p := mustPin(b, Range{Count: n}, Median, EveryValue)
			for _, o := range obs[:n/10] {
				p.Observe(o)
			}
		}
	})
}
