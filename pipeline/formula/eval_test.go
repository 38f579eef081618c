package formula

import (
	"math"
	"strings"
	"testing"
)

var testPins = []string{"P1", "P2", "P3", "P4", "P5"}

// defaultValues are distinct so that a test reading the wrong pin fails.
var defaultValues = []float64{3, -2, 0.5, 10, 7}

type evalCase struct {
	src    string
	want   float64
	null   bool      // want ok=false, no error
	values []float64 // nil: defaultValues
}

func runEvalCases(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, tc := range cases {
		p, err := Compile(tc.src, testPins)
		if err != nil {
			t.Errorf("Compile(%q): %v", tc.src, err)
			continue
		}
		values := tc.values
		if values == nil {
			values = defaultValues
		}
		got, ok, err := p.Eval(values)
		switch {
		case err != nil:
			t.Errorf("%q: Eval error %v (code %s)", tc.src, err, p)
		case tc.null && ok:
			t.Errorf("%q = %v, want null (code %s)", tc.src, got, p)
		case !tc.null && !ok:
			t.Errorf("%q = null, want %v (code %s)", tc.src, tc.want, p)
		case !tc.null && math.Abs(got-tc.want) > 1e-12*math.Max(1, math.Abs(tc.want)):
			t.Errorf("%q = %v, want %v (code %s)", tc.src, got, tc.want, p)
		}
	}
}

func TestOperatorsAndPrecedence(t *testing.T) {
	runEvalCases(t, []evalCase{
		{src: "P1 + P2", want: 1},
		{src: "P1 - P2", want: 5},
		{src: "P1 * P4", want: 30},
		{src: "P1 x P4", want: 30},
		{src: "P4 / P1", want: 10.0 / 3},
		{src: "P4 % P1", want: 1},
		{src: "-7 % 3", want: -1},      // truncated: sign of the dividend
		{src: "7 % -3", want: 1},       // ...not of the divisor
		{src: "7.5 % 2", want: 1.5},    // fractional operands
		{src: "P4 - P1 - P2", want: 9}, // left-associative
		{src: "P4 / 5 / 2", want: 1},
		{src: "1 + 2 * 3", want: 7},
		{src: "1 + 2 x 3", want: 7},
		{src: "(1 + 2) * 3", want: 9},
		{src: "10 - 4 % 3", want: 9},
		{src: "2 * 3 % 4", want: 2}, // same level: (2*3) % 4
		{src: "-P1 x 2", want: -6},
		{src: "--P1", want: 3},
		{src: "2 x -3", want: -6},
		{src: "-2 * -3", want: 6},
		{src: "1 + -P2", want: 3},
		{src: "P1 - -1", want: 4},
		// comparisons yield booleans, emitted as 1 and 0
		{src: "P1 < P4", want: 1},
		{src: "P1 > P4", want: 0},
		{src: "P1 <= 3", want: 1},
		{src: "P1 >= 3.5", want: 0},
		{src: "P1 == 3", want: 1},
		{src: "P1 != 3", want: 0},
		{src: "1 + 2 < 2 * 2", want: 1}, // arithmetic binds tighter
		{src: "P1 > 1 AND P2 > 1", want: 0},
		{src: "P1 > 1 OR P2 > 1", want: 1},
		{src: "P1 > 1 and P2 < 1", want: 1},
		{src: "P1 > 5 or P2 < 1", want: 1},
		{src: "P1 > 5 Or P2 > 1", want: 0},
		{src: "1 == 1 OR 1 == 2 AND 1 == 2", want: 1},   // AND before OR
		{src: "(1 == 1 OR 1 == 2) AND 1 == 2", want: 0}, // parentheses
		{src: "(1 < 2) == (3 < 4)", want: 1},
		{src: "(P1 > 0) + (P2 > 0) + (P4 > 0)", want: 2}, // booleans count as 1/0
		{src: "P3 AND P4", want: 1},                      // numbers as conditions: non-zero is true
		{src: "0 OR P2", want: 1},
		{src: "0 OR 0", want: 0},
		// numbers
		{src: "1e3", want: 1000},
		{src: "2.5E-1", want: 0.25},
		{src: ".5 + 5.", want: 5.5},
		{src: "1e+2", want: 100},
		{src: "007", want: 7},
		// whitespace and newlines anywhere; the final ";" is optional
		{src: "\n\tP1\n+\r\n  P4 ;\n", want: 13},
		{src: "P1+P4", want: 13},
	})
}

func TestXAsMultiplication(t *testing.T) {
	runEvalCases(t, []evalCase{
		{src: "P1 x P2", want: -6},
		{src: "2x3", want: 6},
		{src: "2xP1", want: 6},
		{src: "2x P1", want: 6},
		{src: "(P1)x(P4)", want: 30},
		{src: "(P1)x2", want: 6},
		{src: "P1 x2", want: 6}, // after an operand x is the operator even when glued
		{src: "1.5x2", want: 3},
		{src: "1e1x2", want: 20},
		{src: "x = 3; x x x", want: 9},   // x as a variable: first and last x are operands
		{src: "x = 2; x x -x", want: -4}, // after an operator, x is an operand again
		{src: "xy = 4; xy x xy", want: 16},
	})
}

func TestAssignments(t *testing.T) {
	runEvalCases(t, []evalCase{
		{src: "a = P1 + P2; a", want: 1},
		{src: "a=P1+P2;b=a*2;c=b+a;c;", want: 3},
		{src: "a = 1; a = a + 1; a = a x 10; a", want: 20}, // reassignment sees the previous value
		{src: "a = P1; b = a; a = 100; b", want: 3},        // b keeps the value at its assignment
		{src: "result = P1 * 2;", want: 6},                 // a final assignment is the result
		{src: "hot = P4 > 5; if(hot, 1, 2)", want: 1},      // boolean variables
		{src: "hot = P4 > 5; hot + 1", want: 2},
		{src: "max = 5; max(max, 1)", want: 5},  // function names are not reserved
		{src: "_tmp1 = 2; _tmp1 * 2", want: 4},  // underscores and digits
		{src: "In0 = 42; In0", want: 42},        // names of the generated code do not leak
		{src: "v1_a = 1; a = 2; v1_a", want: 1}, // ...nor clash with user names
		{src: "let = 2; nil = 3; let + nil", want: 5},
		{src: "P = 1; p = 2; P - p", want: -1}, // case-sensitive
	})
}

func TestFunctions(t *testing.T) {
	runEvalCases(t, []evalCase{
		{src: "min(P1, P2, P3)", want: -2},
		{src: "max(P1, P2, P3)", want: 3},
		{src: "min(P4)", want: 10},
		{src: "max(P1, P2, P3, P4, P5, 11, -20)", want: 11},
		{src: "mean(P1, P2)", want: 0.5},
		{src: "mean(P4)", want: 10},
		{src: "mean(1, 2, 3, 4, 5, 6)", want: 3.5},
		{src: "median(P4)", want: 10},
		{src: "median(5, 1, 3)", want: 3},            // odd count: middle value
		{src: "median(4, 1, 3, 2)", want: 2.5},       // even count: mean of the middle two
		{src: "median(P1, P2, P3, P4, P5)", want: 3}, // -2 0.5 3 7 10
		{src: "median(P1, P2, P3, P4)", want: 1.75},  // -2 0.5 3 10
		{src: "median(1, 1, 1, 1, 2, 3)", want: 1},
		{src: "median(7, 3) + median(1, 9, 5)", want: 10}, // scratch reused within one run
		{src: "abs(P2)", want: 2},
		{src: "abs(P1)", want: 3},
		{src: "sin(0)", want: 0},
		{src: "cos(0)", want: 1},
		{src: "tan(0)", want: 0},
		{src: "sin(P3)", want: math.Sin(0.5)},
		{src: "cos(P3)", want: math.Cos(0.5)},
		{src: "tan(P3)", want: math.Tan(0.5)},
		{src: "round(2.5)", want: 3},
		{src: "round(-2.5)", want: -3}, // half away from zero
		{src: "round(2.4)", want: 2},
		{src: "round(1.2345, 2)", want: 1.23},
		{src: "round(1.235, 1)", want: 1.2},
		{src: "round(-1.25, 1)", want: -1.3}, // 1.25 is exact in binary: away from zero
		{src: "round(1234, -2)", want: 1200},
		{src: "round(1250, -2)", want: 1300},
		{src: "round(P3, 0)", want: 1},
		{src: "round(1e300, 15)", want: 1e300}, // no overflow from scaling
		{src: "MAX(P1, P4)", want: 10},         // function names in any case
		{src: "Round(P3)", want: 1},
		{src: "max(P1 > 0, 0.5)", want: 1}, // boolean arguments count as 1/0
		{src: "abs(min(P1, P2) - max(P3, 1))", want: 3},
	})
}

func TestIfElif(t *testing.T) {
	runEvalCases(t, []evalCase{
		{src: "if(P1 > 0, 1, 2)", want: 1},
		{src: "if(P1 < 0, 1, 2)", want: 2},
		{src: "IF(P1, 1, 2)", want: 1},          // number as condition
		{src: "if(P1 - 3, 1, 2)", want: 2},      // zero is false
		{src: "if(P1 > 0, P2 > 0, 5)", want: 0}, // boolean branch becomes 0
		{src: "if(P1 > 0, P1 < 5, P2 < 5)", want: 1},
		{src: "if(P1 > 0, 1, 2) + 10", want: 11},
		{src: "if(P2 > 0, if(P1 > 0, 1, 2), if(P1 > 0, 3, 4))", want: 3},
		{src: "elif(P1 > 5, 1, P1 > 2, 2, 3)", want: 2},
		{src: "elif(P1 > 5, 1, P1 > 4, 2, 3)", want: 3},
		{src: "elif(P1 > 0, 1, P1 > 2, 2, 3)", want: 1}, // the first true condition wins
		{src: "elif(P1 > 5, 1, 2)", want: 2},
		{src: "elif(P1 > 5, 1, P1 > 4, 2, P1 > 2, 3, 4)", want: 3},
		{src: "elif(P1 > 5, 1, P1 > 4, 2, 3, 3)", want: 3},            // the spec's doubled else
		{src: "elif(P1 > 5, 1, P1 > 4, 2, P4 x 2, P4 x 2)", want: 20}, // doubled else, an expression
		{src: "ELIF(P1 > 5, 1, P1 > 2, 2, 3)", want: 2},
		// laziness: the untaken branch would divide by zero
		{src: "if(P1 > 0, 1, 1 / 0)", want: 1},
		{src: "if(P1 < 0, 1 / 0, 2)", want: 2},
		{src: "if(P2 != 0, P1 / P2, 0)", want: -1.5},
		{src: "if(P1 > 0, 5, P1 % 0)", want: 5},
		{src: "elif(P1 > 0, 1, 1 / 0, 2, 3 / 0)", want: 1},      // later conditions not evaluated either
		{src: "elif(P1 < 0, 1 / 0, P1 > 0, 2, 3 / 0)", want: 2}, // nor untaken values
		{src: "P1 > 0 OR 1 / 0 > 1", want: 1},                   // OR short-circuits
		{src: "P1 < 0 AND 1 / 0 > 1", want: 0},                  // AND short-circuits
		{src: "x = 0; x != 0 AND 10 / x > 2", want: 0},
	})
}

func TestNull(t *testing.T) {
	runEvalCases(t, []evalCase{
		{src: "null", null: true},
		{src: "NULL;", null: true},
		{src: "a = P1; null", null: true},
		{src: "if(P1 > 0, P1, null)", want: 3},
		{src: "if(P1 < 0, P1, null)", null: true},
		{src: "if(P1 < 0, null, P1 > 0)", want: 1}, // boolean branch next to null: 1/0
		{src: "if(P1 < 0, null, null)", null: true},
		{src: "elif(P1 > 5, 1, P1 > 2, null, 3)", null: true},
		{src: "elif(P1 > 5, null, P1 > 4, 2, null)", null: true},
		{src: "if(P1 > 0, if(P2 > 0, P2, null), 0)", null: true}, // nested in result position
		{src: "r = if(P1 > 0, null, 1);", null: true},            // final assignment is the result
		{src: "(null)", null: true},
	})
}

func TestEvalPinsInOrder(t *testing.T) {
	p, err := Compile("a - b", []string{"b", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := p.Eval([]float64{1, 10}); v != 9 || !ok || err != nil {
		t.Fatalf("Eval = %v, %v, %v; want 9, true, nil", v, ok, err)
	}
	// A Program is reused: a second run must not see the first one's state.
	if v, ok, err := p.Eval([]float64{10, 1}); v != -9 || !ok || err != nil {
		t.Fatalf("second Eval = %v, %v, %v; want -9, true, nil", v, ok, err)
	}
	if p.Source() != "a - b" {
		t.Fatalf("Source() = %q", p.Source())
	}
}

func TestMaxPins(t *testing.T) {
	pins := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	p, err := Compile("a + b x 10 + c x 100 + h x 1000", pins)
	if err != nil {
		t.Fatal(err)
	}
	v, ok, err := p.Eval([]float64{1, 2, 3, 4, 5, 6, 7, 8})
	if v != 8321 || !ok || err != nil {
		t.Fatalf("Eval = %v, %v, %v; want 8321", v, ok, err)
	}
	if _, err := Compile("a", append(pins, "i")); err == nil {
		t.Fatal("Compile with 9 pins succeeded")
	}
	p, err = Compile("42", nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := p.Eval(nil); v != 42 || !ok || err != nil {
		t.Fatalf("no pins: Eval = %v, %v, %v", v, ok, err)
	}
}

// mean and median of values near the float64 maximum are finite, as their
// results are; and a formula over MaxLength is refused before it is lexed.
func TestMeanAndMedianNearTheFloat64Maximum(t *testing.T) {
	const big = math.MaxFloat64 / 1.1
	runEvalCases(t, []evalCase{
		{src: "mean(P1, P2, P3)", want: big, values: []float64{big, big, big, 0, 0}},
		{src: "median(P1, P2)", want: big, values: []float64{big, big, 0, 0, 0}},
		{src: "median(P1, P2)", want: 0, values: []float64{-big, big, 0, 0, 0}},
	})
	longest := "P1" + strings.Repeat(" ", MaxLength-2)
	if _, err := Compile(longest, testPins); err != nil {
		t.Fatalf("a formula of MaxLength characters: %v", err)
	}
	if _, err := Compile(longest+" ", testPins); err == nil || !strings.Contains(err.Error(), "at most 4000") {
		t.Fatalf("a formula over MaxLength: %v", err)
	}
}
