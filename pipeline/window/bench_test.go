package window

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

var sink float64

// BenchmarkAggregate runs each aggregate the way a pin does (with its
// scratch slice) over windows of 10 and 1000 observations one second apart.
func BenchmarkAggregate(b *testing.B) {
	for _, n := range []int{10, 1000} {
		obs := make([]Observation, n)
		for i := range obs {
			obs[i] = ob(time.Duration(i)*sec, float64((i*7919)%1000))
		}
		evalAt := obs[n-1].Time.Add(30 * sec)
		for _, a := range []Aggregate{Last, First, Sum, Mean, Median, Max, Min, TimeWeightedMean, Integral} {
			b.Run(fmt.Sprintf("%s/n=%d", a, n), func(b *testing.B) {
				var scratch []float64
				b.ReportAllocs()
				for b.Loop() {
					v, _ := a.apply(obs, evalAt, &scratch)
					sink += v
				}
			})
		}
	}
}

// BenchmarkPinObserve feeds a count-10 every_value pin in time order: the
// per-observation cost of the default kind of virtual datapoint input.
func BenchmarkPinObserve(b *testing.B) {
	for _, a := range []Aggregate{Max, Mean, Median, TimeWeightedMean} {
		b.Run(fmt.Sprintf("count10/%s", a), func(b *testing.B) {
			p := mustPin(b, Range{Count: 10}, a, EveryValue)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				p.Observe(Observation{Time: t0.Add(time.Duration(i) * sec), Value: float64(i % 97)})
			}
		})
	}
	b.Run("time60s/mean", func(b *testing.B) {
		p := mustPin(b, Range{Duration: time.Minute}, Mean, EveryValue)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			p.Observe(Observation{Time: t0.Add(time.Duration(i) * sec), Value: float64(i % 97)})
		}
	})
}

// newDatapoint builds the largest formula datapoint: five count-10 pins,
// each filled past its count so its buffer is allocated.
func newDatapoint(t testing.TB) *Calc {
	pins := map[string]*Pin{}
	for i := 1; i <= 5; i++ {
		pins[fmt.Sprintf("P%d", i)] = mustPin(t, Range{Count: 10}, Mean, EveryValue)
	}
	c, err := NewCalc(pins)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		for name := range pins {
			c.Observe(name, ob(time.Duration(i)*sec, float64(i)))
		}
	}
	return c
}

func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMemoryPerDatapoint measures the heap of 10,000 instances: a pin with a
// count-10 window, and a calculation of five such pins (the 4 KiB budget
// of the issue).
func TestMemoryPerDatapoint(t *testing.T) {
	const n = 10_000
	before := heapAlloc()
	pins := make([]*Pin, n)
	for i := range pins {
		pins[i] = mustPin(t, Range{Count: 10}, Mean, EveryValue)
		for j := range 25 {
			pins[i].Observe(ob(time.Duration(j)*sec, 1))
		}
	}
	perPin := float64(heapAlloc()-before) / n
	runtime.KeepAlive(pins)
	pins = nil

	before = heapAlloc()
	calcs := make([]*Calc, n)
	for i := range calcs {
		calcs[i] = newDatapoint(t)
	}
	perCalc := float64(heapAlloc()-before) / n
	runtime.KeepAlive(calcs)

	t.Logf("heap per pin (count 10): %.0f B; per calculation of 5 such pins: %.0f B", perPin, perCalc)
	if perCalc > 4096 {
		t.Errorf("a five-pin datapoint takes %.0f B, over the 4 KiB budget", perCalc)
	}
}
