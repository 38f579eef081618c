package formula

import (
	"math"
	"slices"

	"github.com/expr-lang/expr"
)

// functionOptions declares the f_* functions that generated code calls.
// Arguments arrive as []any holding float64 (the generator converts every
// argument), and each declaration carries its Go signature so that expr's
// checker types the calls. They are built per compiled formula, as f_divzero
// and f_mod close over the source to place their errors. They must hold no
// mutable state: a Cache shares one compiled program between VMs that run
// concurrently.
func functionOptions(src string) []expr.Option {
	f := func(a any) float64 { return a.(float64) }
	return []expr.Option{
		// min and max return the winning argument itself, not a new float,
		// to avoid boxing a fresh interface value.
		expr.Function("f_min", func(args ...any) (any, error) {
			return pick(args, func(x, best float64) bool { return x < best }), nil
		}, new(func(...float64) float64)),
		expr.Function("f_max", func(args ...any) (any, error) {
			return pick(args, func(x, best float64) bool { return x > best }), nil
		}, new(func(...float64) float64)),
		expr.Function("f_mean", func(args ...any) (any, error) {
			sum, n := 0.0, float64(len(args))
			for _, a := range args {
				sum += f(a)
			}
			if m := sum / n; !math.IsInf(m, 0) {
				return m, nil
			}
			// The sum overflowed where the mean cannot (mean(1e308,
			// 1e308)): divide first.
			m := 0.0
			for _, a := range args {
				m += f(a) / n
			}
			return m, nil
		}, new(func(...float64) float64)),
		expr.Function("f_median", func(args ...any) (any, error) {
			// A local array rather than a buffer kept between calls, which
			// would be shared by every VM running the program. It stays on
			// the stack; only a median of more than medianBuf values
			// allocates.
			var buf [medianBuf]float64
			scratch := buf[:0]
			for _, a := range args {
				scratch = append(scratch, f(a))
			}
			slices.Sort(scratch)
			n := len(scratch)
			if n%2 == 1 {
				return scratch[n/2], nil
			}
			return scratch[n/2-1]*0.5 + scratch[n/2]*0.5, nil // (a+b)/2 without the overflow of a+b
		}, new(func(...float64) float64)),
		expr.Function("f_abs", func(args ...any) (any, error) { return math.Abs(f(args[0])), nil },
			new(func(float64) float64)),
		expr.Function("f_sin", func(args ...any) (any, error) { return math.Sin(f(args[0])), nil },
			new(func(float64) float64)),
		expr.Function("f_cos", func(args ...any) (any, error) { return math.Cos(f(args[0])), nil },
			new(func(float64) float64)),
		expr.Function("f_tan", func(args ...any) (any, error) { return math.Tan(f(args[0])), nil },
			new(func(float64) float64)),
		expr.Function("f_round", func(args ...any) (any, error) { return math.Round(f(args[0])), nil },
			new(func(float64) float64)),
		expr.Function("f_roundn", func(args ...any) (any, error) {
			return roundDigits(f(args[0]), args[1].(int)), nil
		}, new(func(float64, int) float64)),
		expr.Function("f_mod", func(args ...any) (any, error) {
			if f(args[1]) == 0 {
				return nil, newRuntimeError(src, args[2].(int), ErrModuloByZero)
			}
			return math.Mod(f(args[0]), f(args[1])), nil
		}, new(func(float64, float64, int) float64)),
		// f_divzero is called only on the failing path of a division.
		expr.Function("f_divzero", func(args ...any) (any, error) {
			return nil, newRuntimeError(src, args[0].(int), ErrDivisionByZero)
		}, new(func(int) float64)),
	}
}

// medianBuf is how many median arguments fit without an allocation: more
// than the pins a formula can have.
const medianBuf = 16

// pick returns the argument that better prefers over all others. A NaN
// (only possible from an overflowed intermediate) wins, so that it reaches
// the result check instead of being silently skipped.
func pick(args []any, better func(x, best float64) bool) any {
	best := args[0]
	for _, a := range args[1:] {
		x, b := a.(float64), best.(float64)
		if b != b {
			break
		}
		if x != x || better(x, b) {
			best = a
		}
	}
	return best
}

// roundDigits rounds v half away from zero to d decimal digits; d < 0
// rounds to a multiple of 10^-d. It scales the binary value, so a decimal
// that float64 cannot represent exactly rounds as its binary neighbour does
// (round(1.005, 2) = 1 because 1.005 is stored as 1.00499...).
func roundDigits(v float64, d int) float64 {
	if d < 0 {
		p := math.Pow10(-d)
		return math.Round(v/p) * p
	}
	p := math.Pow10(d)
	scaled := v * p
	if math.IsInf(scaled, 0) {
		return v // too large to carry d more digits: already an integer
	}
	return math.Round(scaled) / p
}
