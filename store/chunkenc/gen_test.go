package chunkenc

import (
	"math"
	"math/rand/v2"
	"time"
)

// Deterministic test series: a week of minute data (10,080 points) per kind,
// shaped like what the platform stores. Each generator takes its own seed so
// the figures do not move when another generator changes.

const weekOfMinutes = 7 * 24 * 60

// monday is a week start (partitions and chunks start on Mondays, UTC).
var monday = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// round2 is what a sensor gateway sends: the value rounded to 0.01.
func round2(x float64) float64 { return math.Round(x*100) / 100 }

// temperature is a room temperature: a daily swing, a slow random drift and
// sensor noise of a few hundredths, rounded to 0.01.
func temperature(r *rand.Rand, n int) []float64 {
	vs := make([]float64, n)
	drift := 0.0
	for i := range vs {
		drift += r.NormFloat64() * 0.01
		day := 2.5 * math.Sin(2*math.Pi*float64(i)/1440)
		vs[i] = round2(21 + day + drift + r.NormFloat64()*0.03)
	}
	return vs
}

func minuteTimes(n int) []int64 {
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = monday + int64(i)*60e6
	}
	return ts
}

func zip(ts []int64, vs []float64) []Point {
	pts := make([]Point, len(ts))
	for i := range pts {
		pts[i] = Point{ts[i], vs[i]}
	}
	return pts
}

// fixedDecimal: exact minute cadence, temperatures rounded to 0.01.
func fixedDecimal(seed uint64) []Point {
	return zip(minuteTimes(weekOfMinutes), temperature(rng(seed), weekOfMinutes))
}

// jittered: minute cadence with ±2 s of millisecond jitter (devices that
// stamp with their own clock), temperatures rounded to 0.01.
func jittered(seed uint64) []Point {
	r := rng(seed)
	ts := minuteTimes(weekOfMinutes)
	for i := range ts {
		ts[i] += (r.Int64N(4001) - 2000) * 1000
	}
	return zip(ts, temperature(r, weekOfMinutes))
}

// sixteenths: a sensor that quantizes to 1/16 of a degree (DS18B20 and
// many others), so its decimals need four places but move in steps of 625.
func sixteenths(seed uint64) []Point {
	vs := temperature(rng(seed), weekOfMinutes)
	for i, v := range vs {
		vs[i] = math.Round(v*16) / 16
	}
	return zip(minuteTimes(weekOfMinutes), vs)
}

// onOff: a pump or valve state, 0 or 1, switching a few times an hour.
func onOff(seed uint64) []Point {
	r := rng(seed)
	vs := make([]float64, weekOfMinutes)
	state := 0.0
	for i := range vs {
		if r.IntN(20) == 0 {
			state = 1 - state
		}
		vs[i] = state
	}
	return zip(minuteTimes(weekOfMinutes), vs)
}

// meter: an energy counter in eighths of a kWh at a large reading, rising by
// a varying consumption with idle stretches.
func meter(seed uint64) []Point {
	r := rng(seed)
	vs := make([]float64, weekOfMinutes)
	v := 123456789.125
	for i := range vs {
		if r.IntN(4) != 0 {
			v += float64(r.IntN(24)) * 0.125
		}
		vs[i] = v
	}
	return zip(minuteTimes(weekOfMinutes), vs)
}

// movingMean: a 15-minute moving mean of a temperature, like a virtual
// datapoint's output: long binary fractions, no short decimal.
func movingMean(seed uint64) []Point {
	t := temperature(rng(seed), weekOfMinutes+14)
	vs := make([]float64, weekOfMinutes)
	for i := range vs {
		sum := 0.0
		for _, x := range t[i : i+15] {
			sum += x
		}
		vs[i] = sum / 15
	}
	return zip(minuteTimes(weekOfMinutes), vs)
}

// smoothed: an exponentially smoothed temperature, another computed output,
// but one whose values carry no small-denominator structure: the full 52
// bits of fraction are noise to any codec.
func smoothed(seed uint64) []Point {
	t := temperature(rng(seed), weekOfMinutes)
	vs := make([]float64, weekOfMinutes)
	y := t[0]
	for i, x := range t {
		y += 0.07 * (x - y)
		vs[i] = y
	}
	return zip(minuteTimes(weekOfMinutes), vs)
}

// kinds are the series the size figures and benchmarks run over.
var kinds = []struct {
	name string
	gen  func(seed uint64) []Point
	goal float64 // bytes per point the codec must stay under; 0: none
}{
	{"fixed-decimal", fixedDecimal, 0.6},
	{"jittered", jittered, 3},
	{"sixteenths", sixteenths, 0.6},
	{"on-off", onOff, 0},
	{"meter", meter, 0},
	{"moving-mean", movingMean, 6},
	{"smoothed", smoothed, 6},
}
