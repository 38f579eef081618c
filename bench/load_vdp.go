package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openbdp/bdp/pipeline/window"
)

// VDPKind is one kind of virtual datapoint the load harness runs. Every
// kind reads one source of the rounds, with one pin, and fires on every
// value: a datapoint's observations then reach it in the order its path
// carries them, whichever node stores them, so each output is exactly
// what the harness computes here from the values it sent (expected), with
// the same floating-point operations in the same order as the engine's
// pure core (pipeline/window, the formula). Two pins on sources of the
// rounds would not be: a delivery of several rounds (a batch) reaches
// the actor pin by pin, not in time order. Timed triggers are left out:
// they fire on the wall clock, which the rounds' event times (a minute
// apart, in the past) do not follow.
type VDPKind string

// The kinds; VDPFormula is the workload of bdp-bench cluster and the
// default.
const (
	// VDPFormula is P1 × (i+1), P1 the source's value.
	VDPFormula VDPKind = "formula"
	// VDPFormulaCount is P1 × (i+1), P1 the sum of the source's last
	// loadCountWindow observations (a count window).
	VDPFormulaCount VDPKind = "formula_count"
	// VDPFormulaTime is P1 × (i+1), P1 the mean of the source over the
	// last loadTimeWindow minutes (a time window, (t-5m, t]).
	VDPFormulaTime VDPKind = "formula_time"
	// VDPGradient is the source's change per minute (factorization 60).
	VDPGradient VDPKind = "gradient"
	// VDPHumidity is the absolute humidity of the source read as relative
	// humidity in percent, at the temperature of <prefix>temperature,
	// which has one observation (loadTemperature °C), stored before the
	// datapoints start.
	VDPHumidity VDPKind = "humidity"
)

// The windows of the kinds, in observations or in minutes (rounds).
const (
	loadCountWindow = 5
	loadTimeWindow  = 5
)

// loadTemperature is the humidity datapoints' temperature, °C.
const loadTemperature = 21

// VDPKinds are the kinds in the order a mix lays them out.
func VDPKinds() []VDPKind {
	return []VDPKind{VDPFormula, VDPFormulaCount, VDPFormulaTime, VDPGradient, VDPHumidity}
}

// ParseVDPMix reads "formula=60,gradient=20,humidity=20": how many
// datapoints of each kind.
func ParseVDPMix(s string) (map[VDPKind]int, error) {
	mix := map[VDPKind]int{}
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, count, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(count)
		kind := VDPKind(strings.TrimSpace(name))
		if !ok || err != nil || n < 0 || !slices.Contains(VDPKinds(), kind) {
			return nil, fmt.Errorf("vdp mix %q: want kind=count with a kind of %v", part, VDPKinds())
		}
		mix[kind] += n
	}
	return mix, nil
}

// layOutKinds gives each datapoint its kind: the mix's kinds in the order
// of VDPKinds, each a block; datapoint i reads source i mod sources, so
// a block longer than the sources reaches every source. No mix: vdps
// formula datapoints.
func layOutKinds(mix map[VDPKind]int, vdps int) []VDPKind {
	if len(mix) == 0 {
		return slices.Repeat([]VDPKind{VDPFormula}, vdps)
	}
	var kinds []VDPKind
	for _, k := range VDPKinds() {
		kinds = append(kinds, slices.Repeat([]VDPKind{k}, mix[k])...)
	}
	return kinds
}

// vdpConfig is datapoint i's type and configuration body.
func (l *Load) vdpConfig(i int) (typ, body string) {
	src, k := l.source(i%l.opts.Sources), i+1
	switch l.kinds[i] {
	case VDPFormulaCount:
		return "formula", fmt.Sprintf(`{"pins":{"P1":{"dataPointID":%q,"data_range":{"count":%d},"aggregate":"sum","trigger":"every_value"}},"parameters":{"formula":"P1 * %d;"}}`,
			src, loadCountWindow, k)
	case VDPFormulaTime:
		return "formula", fmt.Sprintf(`{"pins":{"P1":{"dataPointID":%q,"data_range":{"time":"%dm"},"aggregate":"mean","trigger":"every_value"}},"parameters":{"formula":"P1 * %d;"}}`,
			src, loadTimeWindow, k)
	case VDPGradient:
		return "gradient", fmt.Sprintf(`{"pins":{"input":{"dataPointID":%q}},"parameters":{"factorization":60}}`, src)
	case VDPHumidity:
		return "absolute_humidity", fmt.Sprintf(`{"pins":{"relative_humidity":{"dataPointID":%q},"temperature":{"dataPointID":%q}},"parameters":{"relative_humidity_unit":"percent"}}`,
			src, l.temperature())
	}
	return "formula", fmt.Sprintf(`{"pins":{"P1":{"dataPointID":%q}},"parameters":{"formula":"P1 * %d;"}}`, src, k)
}

func (l *Load) roundTime(r int) time.Time { return l.start.Add(time.Duration(r) * time.Minute) }

// temperature names the humidity datapoints' temperature source.
func (l *Load) temperature() string { return l.opts.Prefix + "temperature" }

// storeTemperature stores the one observation of the humidity
// datapoints' temperature, a minute before round 0, before they start:
// their windows are refilled with it.
func (l *Load) storeTemperature(ctx context.Context) error {
	body := fmt.Sprintf(`{%q:[{"time":%q,"value":%d}]}`, l.temperature(), l.roundTime(-1).Format(time.RFC3339), loadTemperature)
	if err := l.do(ctx, "POST", fmt.Sprintf("/v2/project/%d/timeseries", l.opts.ProjectID), body, nil); err != nil {
		return fmt.Errorf("store the temperature: %w", err)
	}
	return nil
}

// sourceValue is source s's value in round r. With humidity datapoints
// in the mix the values stay within 0..99, a relative humidity in percent
// the calculation takes; otherwise they grow as bdp-bench cluster has
// always fed them.
func (l *Load) sourceValue(r, s int) int {
	if l.bounded {
		return (r*10 + s) % 100
	}
	return r*10 + s
}

// windowValues are source s's values of rounds max(0, r-n+1)..r, oldest
// first, as a window holding the last n observations has them.
func (l *Load) windowValues(r, s, n int) []float64 {
	var vs []float64
	for j := max(0, r-n+1); j <= r; j++ {
		vs = append(vs, float64(l.sourceValue(j, s)))
	}
	return vs
}

// sumOf adds in order, as the windows' sum does.
func sumOf(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s
}

// expected is datapoint i's output at round r, and whether it has one:
// the engine's calculation over the values sent in rounds 0..r (the
// windows start empty: the datapoints run before the first round).
func (l *Load) expected(i, r int) (float64, bool) {
	s, k := i%l.opts.Sources, float64(i+1)
	switch l.kinds[i] {
	case VDPFormulaCount:
		return sumOf(l.windowValues(r, s, loadCountWindow)) * k, true
	case VDPFormulaTime:
		// (t-5m, t] holds the rounds r-4..r, a minute apart.
		vs := l.windowValues(r, s, loadTimeWindow)
		return sumOf(vs) / float64(len(vs)) * k, true
	case VDPGradient:
		if r == 0 {
			return 0, false // the first output comes with the second input
		}
		seconds := l.roundTime(r).Sub(l.roundTime(r - 1)).Seconds()
		v := (float64(l.sourceValue(r, s)) - float64(l.sourceValue(r-1, s))) / seconds * 60
		return v, true
	case VDPHumidity:
		v, err := window.AbsoluteHumidity(float64(l.sourceValue(r, s)), loadTemperature, math.NaN(), window.HumidityUnits{RH: "percent"})
		return v, err == nil
	}
	return float64(l.sourceValue(r, s)) * k, true
}

// lastExpected is the last round before rounds at which datapoint i has
// an output, or -1.
func (l *Load) lastExpected(i, rounds int) int {
	for r := rounds - 1; r >= 0; r-- {
		if _, ok := l.expected(i, r); ok {
			return r
		}
	}
	return -1
}
