package formula

import (
	"errors"
	"strings"
	"testing"
)

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		src  string
		want string // the full Error() text
		pos  int    // expected byte offset
	}{
		// unexpected token
		{"a = P1 + ;", `formula: 1:10: unexpected ";"`, 9},
		{";", `formula: 1:1: unexpected ";"`, 0},
		{"P1;;", `formula: 1:4: unexpected ";"`, 3},
		{"+P1", `formula: 1:1: unexpected "+"`, 0},
		{"max(P1,)", `formula: 1:8: unexpected ")"`, 7},
		{"P1 x", `formula: 1:5: unexpected end of formula`, 4},
		{"(", `formula: 1:2: unexpected end of formula`, 1},
		{"P1 = = 2", `formula: 1:6: unexpected "=" (use "==" to compare)`, 5},
		{"P1 + P2 = 3", `formula: 1:9: unexpected "=" (use "==" to compare)`, 8},
		// unclosed parentheses
		{"(P1 + P2", `formula: 1:9: expected ")" to close "(" at 1:1, found end of formula`, 8},
		{"(P1 + P2;", `formula: 1:9: expected ")" to close "(" at 1:1, found ";"`, 8},
		{"P1\n  + (P2 *\n  3", `formula: 3:4: expected ")" to close "(" at 2:5, found end of formula`, 16},
		{"max(P1, P2", `formula: 1:11: expected "," or ")" to close "(" at 1:4, found end of formula`, 10},
		{"max(P1 P2)", `formula: 1:8: expected "," or ")" to close "(" at 1:4, found "P2"`, 7},
		{"if(P1 = 2, 1, 0)", `formula: 1:7: expected "," or ")" to close "(" at 1:3, found "=" (use "==" to compare)`, 6},
		// unknown identifier
		{"P6 + 1", `formula: 1:1: unknown identifier "P6"`, 0},
		{"a = 1;\n  P1 + b", `formula: 2:8: unknown identifier "b"`, 14},
		{"p1 + 1", `formula: 1:1: unknown identifier "p1" (did you mean "P1"?)`, 0},
		{"Total = 1; total", `formula: 1:12: unknown identifier "total" (did you mean "Total"?)`, 11},
		{"b = a + 1; a = 2; b", `formula: 1:5: "a" is used before its assignment`, 4},
		{"P1xP2", `formula: 1:1: unknown identifier "P1xP2"`, 0},
		// unknown function
		{"foo(P1)", `formula: 1:1: unknown function "foo"`, 0},
		{"P1 + P1(2)", `formula: 1:6: unknown function "P1"`, 5},
		// wrong argument count
		{"abs(P1, P2)", `formula: 1:1: abs takes 1 argument, got 2`, 0},
		{"1 + sin()", `formula: 1:5: sin takes 1 argument, got 0`, 4},
		{"max()", `formula: 1:1: max takes at least 1 argument, got 0`, 0},
		{"Median()", `formula: 1:1: Median takes at least 1 argument, got 0`, 0},
		{"round(P1, 2, 3)", `formula: 1:1: round takes 1 or 2 arguments, got 3`, 0},
		{"round(P1, P2)", `formula: 1:11: round: the number of digits must be an integer constant from -15 to 15`, 10},
		{"round(P1, 1.5)", `formula: 1:11: round: the number of digits must be an integer constant from -15 to 15`, 10},
		{"round(P1, -16)", `formula: 1:11: round: the number of digits must be an integer constant from -15 to 15`, 10},
		{"if(P1, 2)", `formula: 1:1: if takes 3 arguments (condition, then, else), got 2`, 0},
		{"if(P1, 2, 3, 4)", `formula: 1:1: if takes 3 arguments (condition, then, else), got 4`, 0},
		{"elif(P1, 1)", `formula: 1:1: elif takes condition, value pairs and then one else value (an odd number of arguments, at least 3), got 2`, 0},
		{"elif(P1, 1, P2, 2)", `formula: 1:1: elif takes condition, value pairs and then one else value (an odd number of arguments, at least 3), got 4`, 0},
		{"elif(P1,1,P2,2,3,4)", `formula: 1:1: elif takes condition, value pairs and then one else value (an odd number of arguments, at least 3), got 6`, 0},
		// assignment to a pin
		{"P1 = 3;", `formula: 1:1: cannot assign to pin "P1"`, 0},
		{"a = 1; P2 = a; a", `formula: 1:8: cannot assign to pin "P2"`, 7},
		// empty formula
		{"", `formula: 1:1: empty formula`, 0},
		{"  \n\t ", `formula: 1:1: empty formula`, 0},
		// missing semicolon between equations
		{"a = P1\nb = 2;", `formula: 2:1: missing ";" before "b"`, 7},
		{"a = P1 P2", `formula: 1:8: missing ";" before "P2"`, 7},
		{"a = P1\nx = 2; a", `formula: 2:1: missing ";" before "x"`, 7},
		{"a = P1\nxy = 2; a", `formula: 2:1: missing ";" before "xy"`, 7},
		{"a = 2 (P1)", `formula: 1:7: missing ";" before "("`, 6},
		// trailing garbage
		{"P1 + P2; )", `formula: 1:10: unexpected ")"`, 9},
		{"P1 + P2 )", `formula: 1:9: unexpected ")"`, 8},
		{"P1 $ 2", `formula: 1:4: invalid character "$"`, 3},
		{"P1 + P2;\n\n  #", `formula: 3:3: invalid character "#"`, 12},
		// lexical errors, columns counted in characters
		{"P1 +\n\n   é", `formula: 3:4: invalid character "é"`, 9},
		{"P1 + \xff", `formula: 1:6: invalid byte 0xff`, 5},
		{"P1 ! P2", `formula: 1:4: invalid character "!"`, 3},
		{"P1 + 1e999", `formula: 1:6: number "1e999" out of range`, 5},
		{"2abc", `formula: 1:1: malformed number "2abc"`, 0},
		{"2e", `formula: 1:1: malformed number "2e"`, 0},
		{"1.2.3", `formula: 1:1: malformed number "1.2.3"`, 0},
		{"2X3", `formula: 1:1: malformed number "2X3"`, 0}, // only lower-case x multiplies
		// the leftmost error wins, whether lexical or syntactic
		{"P1 + ; $", `formula: 1:6: unexpected ";"`, 5},
		// semantics
		{"P1 + P2; P3", `formula: 1:1: only the last equation may be a plain expression; assign this one to a variable or remove it`, 0},
		{"a = null; a", `formula: 1:5: null can only be the result (the last equation, or an if/elif branch there)`, 4},
		{"null + 1", `formula: 1:1: null can only be the result (the last equation, or an if/elif branch there)`, 0},
		{"max(P1, null)", `formula: 1:9: null can only be the result (the last equation, or an if/elif branch there)`, 8},
		{"if(null, 1, 2)", `formula: 1:4: null can only be the result (the last equation, or an if/elif branch there)`, 3},
		{"if(P1 > 0, null, 1) + 1", `formula: 1:12: null can only be the result (the last equation, or an if/elif branch there)`, 11},
		{"1 < 2 < 3", `formula: 1:7: comparisons cannot be chained; combine them with AND`, 6},
		{"P1 == P2 != 1", `formula: 1:10: comparisons cannot be chained; combine them with AND`, 9},
		{"null = 1; 2", `formula: 1:6: unexpected "=" (use "==" to compare)`, 5},
		{"AND = 1; 2", `formula: 1:1: unexpected "AND"`, 0},
		// syntax errors are reported before semantic ones, even if later
		{"foo(1); P1 +", `formula: 1:13: unexpected end of formula`, 12},
	}
	for _, tc := range cases {
		_, err := Compile(tc.src, testPins)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Compile(%q) error = %v, want *SyntaxError", tc.src, err)
			continue
		}
		if se.Error() != tc.want || se.Pos != tc.pos {
			t.Errorf("Compile(%q):\n got %s (pos %d)\nwant %s (pos %d)", tc.src, se.Error(), se.Pos, tc.want, tc.pos)
		}
	}
}

func TestLimits(t *testing.T) {
	deep := strings.Repeat("(", 1000) + "1" + strings.Repeat(")", 1000)
	_, err := Compile(deep, nil)
	if err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Errorf("deep nesting: %v", err)
	}
	long := strings.Repeat("1 + ", 3000) + "1"
	_, err = Compile(long, nil)
	if err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("long formula: %v", err)
	}
	// Realistic sizes stay well inside the limits.
	ok := strings.Repeat("(", 30) + "P1" + strings.Repeat(" + 1)", 30)
	if _, err := Compile(ok, testPins); err != nil {
		t.Errorf("30 levels of nesting: %v", err)
	}
}

func TestPinErrors(t *testing.T) {
	for _, pins := range [][]string{
		{"P1", "P1"},
		{"1P"},
		{""},
		{"P-1"},
		{"null"},
		{"And"},
		{"a", "b", "c", "d", "e", "f", "g", "h", "i"},
	} {
		_, err := Compile("1", pins)
		var se *SyntaxError
		if err == nil || errors.As(err, &se) {
			t.Errorf("Compile with pins %q: error %v, want a plain error", pins, err)
		}
	}
}

func TestRuntimeErrors(t *testing.T) {
	cases := []struct {
		src    string
		values []float64
		is     error
		want   string
	}{
		{"P1 / P2", []float64{1, 0}, ErrDivisionByZero, "formula: 1:4: division by zero"},
		{"P1 / 0", []float64{1, 2}, ErrDivisionByZero, "formula: 1:4: division by zero"},
		{"a = 1;\nP1 / (P2 - 2)", []float64{1, 2}, ErrDivisionByZero, "formula: 2:4: division by zero"},
		{"(P1 + 1) / (P2 x 2)", []float64{1, 0}, ErrDivisionByZero, "formula: 1:10: division by zero"},
		{"1 / P1 + 1 / P2", []float64{0, 0}, ErrDivisionByZero, "formula: 1:3: division by zero"}, // left to right
		{"(1 / P1) / (1 / P2)", []float64{0, 0}, ErrDivisionByZero, "formula: 1:4: division by zero"},
		{"P1 % P2", []float64{1, 0}, ErrModuloByZero, "formula: 1:4: modulo by zero"},
		{"a = P1 % 0; 1", []float64{1, 2}, ErrModuloByZero, "formula: 1:8: modulo by zero"},
		{"if(P1 > 0, 1 / P2, 0)", []float64{1, 0}, ErrDivisionByZero, "formula: 1:14: division by zero"},
		{"P1 x 1e308 x 10", []float64{1, 0}, ErrNotFinite, "formula: 1:1: result is not a finite number"},
		{"a = 1;\n  P1 x 1e308 - P1 x 1e308 x 10", []float64{10, 0}, ErrNotFinite, "formula: 2:3: result is not a finite number"},
		{"max(P1 x 1e308 x 10 - P1 x 1e308 x 10, 1)", []float64{10, 0}, ErrNotFinite, "formula: 1:1: result is not a finite number"}, // NaN is not skipped by max
		{"P1 + P2", []float64{nan(), 1}, ErrNotFinite, `formula: pin "P1": not a finite number`},
		{"P1 + P2", []float64{1, inf()}, ErrNotFinite, `formula: pin "P2": not a finite number`},
	}
	for _, tc := range cases {
		p, err := Compile(tc.src, []string{"P1", "P2"})
		if err != nil {
			t.Errorf("Compile(%q): %v", tc.src, err)
			continue
		}
		v, ok, err := p.Eval(tc.values)
		if !errors.Is(err, tc.is) || err.Error() != tc.want || ok || v != 0 {
			t.Errorf("%q on %v = %v, %v, %v; want error %q", tc.src, tc.values, v, ok, err, tc.want)
		}
	}
	// The VM recovers from a failed run: the next one succeeds.
	p, _ := Compile("(P1 + P2) / P2", []string{"P1", "P2"})
	if _, _, err := p.Eval([]float64{1, 0}); err == nil {
		t.Error("no division by zero")
	}
	if v, ok, err := p.Eval([]float64{2, 2}); v != 2 || !ok || err != nil {
		t.Errorf("run after an error = %v, %v, %v; want 2", v, ok, err)
	}
	if _, _, err := p.Eval([]float64{1}); err == nil {
		t.Error("Eval with too few values succeeded")
	}
}

func nan() float64 { var z float64; return z / z }
func inf() float64 { var z float64; return 1 / z }
