package actors

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/openbdp/bdp/pipeline/formula"
)

// BenchmarkCalculatorObserve is the calculation behind one stored source
// observation of the figure (bdp-bench vdp): a formula virtual
// datapoint with two pins, count window 10, mean, every_value, its windows
// full. One op is one Observe that fires and computes an output: the
// actor's CPU per observation, without the mailbox and the write. The
// formula's own cost is pipeline/formula's BenchmarkEval5Pins.
func BenchmarkCalculatorObserve(b *testing.B) {
	calc := figureCalculator(b)
	t := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	pins := [2]string{"P1", "P2"}
	// Full windows first, as after a start from history.
	i := 0
	for ; i < 2*vdpBenchWindow; i++ {
		calc.Observe(pins[i%2], Point{Time: t.Add(time.Duration(i) * time.Second), Value: float64(i)})
	}
	b.ReportAllocs()
	for b.Loop() {
		// Alternating pins, each one's times increasing: the live order.
		if _, ok := calc.Observe(pins[i%2], Point{Time: t.Add(time.Duration(i) * time.Second), Value: float64(i % 100)}); !ok {
			b.Fatalf("observation %d: no output", i)
		}
		i++
	}
}

const vdpBenchWindow = 10

// figureCalculator builds the calculator the way the engine gets it: the
// body through ParseConfig, stored marshalled, read back by
// Definition.
func figureCalculator(b *testing.B) Calculator {
	b.Helper()
	pin := func(src string) map[string]any {
		return map[string]any{"dataPointID": src, "data_range": map[string]any{"count": vdpBenchWindow},
			"aggregate": "mean", "trigger": "every_value"}
	}
	body, err := json.Marshal(map[string]any{"pins": map[string]any{"P1": pin("s0"), "P2": pin("s1")},
		"parameters": map[string]any{"formula": "(P1 + P2) / 2"}})
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := ParseConfig(TypeFormula, body)
	if err != nil {
		b.Fatal(err)
	}
	stored, err := json.Marshal(cfg)
	if err != nil {
		b.Fatal(err)
	}
	def, err := buildDefinition(formula.NewCache(), 1, "v", TypeFormula, stored)
	if err != nil {
		b.Fatal(err)
	}
	calc, err := def.NewCalculator()
	if err != nil {
		b.Fatal(err)
	}
	return calc
}
