package formula

import (
	"errors"
	"math"
	"testing"
	"unicode/utf8"
)

// FuzzFormula checks that Compile and Eval never panic, that every compile
// error is a well-formed *SyntaxError (an expr compile failure would mean
// the generator emitted bad code), and that Eval only ever fails with the
// documented errors. Run: go test ./pipeline/formula -fuzz FuzzFormula
func FuzzFormula(f *testing.F) {
	for _, s := range []string{
		"a=P1+P2; b=max(P1,P2,3); if(a>b, a x 2, mean(P1,P2,3));",
		"elif(P1 > 5, 1, P1 > 4, 2, null)", "2x3xP1", "x = 3; x x x", "P1 % P2 / (P2 - 1)",
		"median(P1, P2, 1, 2)", "round(P1, -2) + abs(sin(P2))", "P1 > 0 AND 1 / P2 OR null",
		"(P1 < 2) == (P2 > 1)", "if(P1, null, if(P2, 1, null))", "1e308 x P1 x 10", "(((P1", "a = ;",
	} {
		f.Add(s, 1.5, -2.0)
	}
	pins := []string{"P1", "P2"}
	f.Fuzz(func(t *testing.T, src string, a, b float64) {
		p, err := Compile(src, pins)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Compile(%q): %v is not a *SyntaxError", src, err)
			}
			if se.Pos < 0 || se.Pos > len(src) || se.Line < 1 || se.Col < 1 || se.Msg == "" {
				t.Fatalf("Compile(%q): malformed %#v", src, se)
			}
			if utf8.ValidString(src) {
				if line, col := lineCol(src, se.Pos); line != se.Line || col != se.Col {
					t.Fatalf("Compile(%q): position %d is %d:%d, error says %d:%d", src, se.Pos, line, col, se.Line, se.Col)
				}
			}
			return
		}
		for range 2 { // twice: a reused VM must behave the same
			v, ok, err := p.Eval([]float64{a, b})
			switch {
			case err != nil:
				if ok || !(errors.Is(err, ErrDivisionByZero) || errors.Is(err, ErrModuloByZero) || errors.Is(err, ErrNotFinite)) {
					t.Fatalf("%q on (%v, %v): unexpected error %v (ok=%v, code %s)", src, a, b, err, ok, p)
				}
			case ok && (math.IsNaN(v) || math.IsInf(v, 0)):
				t.Fatalf("%q on (%v, %v) = %v", src, a, b, v)
			}
		}
	})
}
