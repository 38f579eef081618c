package formula

import "testing"

const bench5Pins = "a=P1+P2; b=max(P3,P4,P5); if(a>b, a x 2, mean(P1,P2,P3,P4,P5));"

// BenchmarkEval5Pins alternates two inputs so that both if branches run.
func BenchmarkEval5Pins(b *testing.B) {
	p, err := Compile(bench5Pins, testPins)
	if err != nil {
		b.Fatal(err)
	}
	inputs := [][]float64{{10, 20, 1, 2, 3}, {1, 2, 30, 40, 50}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, _, err := p.Eval(inputs[i&1]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvalDivision measures the guarded division and abs: the zero
// test adds a comparison and a jump, no call.
func BenchmarkEvalDivision(b *testing.B) {
	p, err := Compile("abs(P1 - P2) / (P3 + P4)", testPins)
	if err != nil {
		b.Fatal(err)
	}
	values := []float64{21.5, 20.25, 1, 2, 0}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := p.Eval(values); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(bench5Pins, testPins); err != nil {
			b.Fatal(err)
		}
	}
}
