package window

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/adhocore/gronx"
)

// The span of a daily or weekly cron schedule is worked out from its
// fields; it must equal the largest gap gronx's own ticks show over two
// weeks, and schedules it does not work out count at the cap.
func TestCronSpanMatchesTheSchedule(t *testing.T) {
	for _, expr := range []string{"0 0 * * *", "*/15 * * * *", "0 * * * *", "30 6,18 * * *", "* 8-17 * * 1-5",
		"0 0 * * 1", "0 0 * * 0", "0 0 * * 7", "5/20 */3 * * *", "0 12 * * 1-5/2", "0 0,12 * * 6,0"} {
		t.Run(expr, func(t *testing.T) {
			var gap time.Duration
			prev, err := gronx.NextTickAfter(expr, t0, true)
			if err != nil {
				t.Fatal(err)
			}
			for prev.Before(t0.Add(15 * 24 * time.Hour)) {
				next, err := gronx.NextTickAfter(expr, prev, false)
				if err != nil {
					t.Fatal(err)
				}
				gap = max(gap, next.Sub(prev))
				prev = next
			}
			if got := cronSpan(expr); got != gap {
				t.Fatalf("cronSpan = %v, gronx's ticks show %v", got, gap)
			}
		})
	}
	for _, expr := range []string{"0 0 31 * *", "0 0 * 2 *", "0 0 L * *", "0 0 * * MON", "0 0 1 1 *"} {
		r := Range{CronStart: expr, CronEnd: expr}
		if got := r.MaxKept(time.Second); got != MaxObservations {
			t.Errorf("end %q: MaxKept %d, want the cap %d", expr, got, MaxObservations)
		}
	}
}

// EstimateBytes is checked against the heap that full pins really hold,
// their sources sending one observation a second (the interval the
// estimate assumes): never under it, and at most 1.5 times it, 2.5 times
// for a time or cron window under 256 observations, whose slice append
// doubles (a 60-s window holds 61 slots of its 71 and could hold 138).
func estimateSlack(r Range, kept int) float64 {
	if r.Count == 0 && kept < 256 {
		return 2.5
	}
	return 1.5
}

func TestEstimateBytesAgainstHeap(t *testing.T) {
	for _, tt := range []struct {
		r     Range
		agg   Aggregate
		trig  Trigger
		pins  int // built at once, so that small pins measure above the noise
		feeds int // observations fed to each, one a second
	}{
		{Range{Count: 10}, Mean, EveryValue, 2000, 30},
		{Range{Count: 1000}, Median, EveryHour, 50, 3000},
		{Range{Count: 100_000}, Max, EveryHour, 4, 150_000},
		{Range{Duration: time.Minute}, Mean, EveryValue, 500, 300},
		{Range{Duration: time.Hour}, Median, EveryMinute, 5, 3 * 3600},
		{Range{Duration: 24 * time.Hour}, Median, EveryHour, 1, 2 * 86_400},
		{Range{CronStart: "0 * * * *", CronEnd: "0 * * * *"}, Mean, EveryValue, 5, 3600 + 3599},
		{Range{CronStart: "0 0 * * *", CronEnd: "0 0 * * *"}, TimeWeightedMean, EveryHour, 1, 86_399},
	} {
		name := fmt.Sprintf("%+v/%s", tt.r, tt.agg)
		t.Run(name, func(t *testing.T) {
			est := EstimateBytes(tt.r, tt.agg, time.Second)
			before := heapInUse()
			pins := make([]*Pin, tt.pins)
			for i := range pins {
				p, err := NewPin(tt.r, tt.agg, tt.trig)
				if err != nil {
					t.Fatal(err)
				}
				for j := range tt.feeds {
					p.Observe(Observation{Time: t0.Add(time.Duration(j) * time.Second), Value: float64(j % 101)})
				}
				if tt.trig != EveryValue {
					p.Fire(t0.Add(time.Duration(tt.feeds) * time.Second).Truncate(time.Hour).Add(time.Hour))
				}
				pins[i] = p
			}
			measured := float64(heapInUse()-before) / float64(tt.pins)
			runtime.KeepAlive(pins)
			ratio := float64(est) / measured
			t.Logf("estimate %d B, measured %.0f B a pin (%d kept), ratio %.2f", est, measured, pins[0].w.len(), ratio)
			if slack := estimateSlack(tt.r, pins[0].w.len()); ratio < 1 || ratio > slack {
				t.Fatalf("estimate %d B for a measured %.0f B: ratio %.2f outside [1, %.1f]", est, measured, ratio, slack)
			}
			// HeldBytes counts what a pin holds as the estimate counts
			// it: about the heap measured, and within the estimate.
			c, err := NewCalc(map[string]*Pin{"P1": pins[0]})
			if err != nil {
				t.Fatal(err)
			}
			if held := c.HeldBytes(); float64(held) < 0.8*measured || float64(held) > 1.25*measured || held > est {
				t.Fatalf("HeldBytes %d B for a measured %.0f B and an estimate of %d B", held, measured, est)
			}
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
