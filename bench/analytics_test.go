package bench

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/openbdp/bdp/analytics"
	"github.com/openbdp/bdp/store"
)

// Every pin of every catalog component gets a finite series: a kernel
// fed by the bench never sees NaN or infinity, whatever pins the
// function table comes to read.
func TestPlantSeriesFinite(t *testing.T) {
	raw, err := os.ReadFile("../analytics/catalog/components.json")
	if err != nil {
		t.Fatal(err)
	}
	comps, err := analytics.ParseCatalog(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range comps {
		pl := plant{component: c.AlphanumericID, seed: 7}
		for _, pin := range c.Pins {
			values := pl.series(pin)
			for i := range 7 * minutesPerDay {
				if v := values(i); math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("%s/%s at minute %d: %v", c.AlphanumericID, pin.AlphanumericID, i, v)
				}
			}
		}
	}
}

// The shapes the kernels judge: an operating message that switches on
// and off many times a day, a meter that only counts up, CO2 at outdoor
// level at night and above IDA 3's bound on working afternoons, a room
// temperature setpoint lowered at night, a supply on its heating curve.
func TestPlantSeriesShapes(t *testing.T) {
	pl := plant{component: "heat_pump", seed: 3}
	op := pl.series(store.CatalogPin{AlphanumericID: "operating_message", Unit: "binary"})
	starts := 0
	for i := 1; i < minutesPerDay; i++ {
		prev, cur := op(i-1), op(i)
		if cur != 0 && cur != 1 {
			t.Fatalf("operating message %v at minute %d", cur, i)
		}
		if prev == 0 && cur == 1 {
			starts++
		}
	}
	if starts < 30 || starts > 60 {
		t.Errorf("%d starts a day, want a plant cycling every 24-40 minutes", starts)
	}
	meter := pl.series(store.CatalogPin{AlphanumericID: "power_consumption_meter", Unit: "kWh"})
	last := meter(0)
	for i := 1; i < 7*minutesPerDay; i++ {
		v := meter(i)
		if v < last {
			t.Fatalf("meter went back from %v to %v at minute %d", last, v, i)
		}
		last = v
	}
	if last < 10_000+100 {
		t.Errorf("meter counted %v kWh in a week", last-10_000)
	}
	room := plant{component: "room", seed: 1}
	co2 := room.series(store.CatalogPin{AlphanumericID: "co2", Unit: "ppm"})
	night, afternoon := co2(3*60), co2(14*60) // Monday 03:00 and 14:00
	if night < 380 || night > 450 || afternoon < 1000 || afternoon > 1400 {
		t.Errorf("co2 %v ppm at night, %v ppm in the afternoon", night, afternoon)
	}
	setpoint := room.series(store.CatalogPin{AlphanumericID: "temperature_setpoint", Unit: "°C"})
	if setpoint(3*60) != 19 || setpoint(10*60) != 21 {
		t.Errorf("setpoint %v at night, %v by day", setpoint(3*60), setpoint(10*60))
	}
	loop := plant{component: "thermal_control_loop", seed: 2}
	supply := loop.series(store.CatalogPin{AlphanumericID: "outlet_temperature_setpoint", Unit: "°C"})
	outdoor := loop.series(store.CatalogPin{AlphanumericID: "outside_air_temperature", Unit: "°C"})
	if got, want := supply(600), 70-(outdoor(600)+12)*45/32; math.Abs(got-want) > 1e-9 {
		t.Errorf("supply setpoint %v, want %v on the curve", got, want)
	}
}

// Percentiles are nearest-rank: a p50 of 9 runs is the 5th, a p90 the
// 9th, and nothing is interpolated.
func TestPercentileMS(t *testing.T) {
	xs := []float64{9, 1, 8, 2, 7, 3, 6, 4, 5}
	for _, c := range []struct{ p, want float64 }{{0.5, 5}, {0.9, 9}, {0.1, 1}, {1, 9}} {
		if got := percentileMS(xs, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p*100, got, c.want)
		}
	}
	if percentileMS(nil, 0.5) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}

// A window counts the observations answered in it, per second, and the
// latency of the uploads sent in it.
func TestIngestWindow(t *testing.T) {
	ms := time.Millisecond
	g := &pacedIngest{uploads: []ingestUpload{
		{sent: 990 * ms, answered: 1010 * ms, n: 200}, // answered in, sent before
		{sent: 1500 * ms, answered: 1505 * ms, n: 200},
		{sent: 2990 * ms, answered: 3020 * ms, n: 200}, // sent in, answered after
	}}
	w := g.window(time.Second, 3*time.Second)
	if w.obsPerS != 200 || w.uploads != 2 || w.p50MS != 5 || w.p99MS != 30 {
		t.Errorf("%+v", w)
	}
}

func TestMondayOnOrBefore(t *testing.T) {
	monday := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for _, at := range []time.Time{monday, monday.Add(time.Hour), time.Date(2026, 11, 29, 23, 59, 0, 0, time.UTC)} {
		if got := mondayOnOrBefore(at); !got.Equal(monday) {
			t.Errorf("%s: %s", at, got)
		}
	}
}
