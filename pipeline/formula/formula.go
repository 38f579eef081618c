package formula

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// MaxPins is the most pins a formula can have. The formula virtual
// datapoint allows five; the rest is headroom.
const MaxPins = 8

// env is what the generated expr code reads pins from (pin i is In<i>). Eval
// passes it by value: boxing it is one small allocation per run, and as the
// boxed copy is not addressable, reading a field through reflect (which is
// how expr loads struct fields) allocates nothing more. Fixed fields rather
// than a map keep Eval free of hashing.
type env struct{ In0, In1, In2, In3, In4, In5, In6, In7 float64 }

// Program is a compiled formula. It is safe for concurrent use. The
// compiled part, with the pool of expr VMs that run it, may be shared with
// other Programs of the same formula (see Cache).
type Program struct {
	c *compiled
}

// compiled is the result of compiling a formula: everything a Program
// needs. It is split out so that a Cache can let the many datapoints that
// use one formula share it; expr's *vm.Program is read-only while it runs,
// so any number of VMs may run it at once.
type compiled struct {
	src       string
	pins      []string
	code      string // the generated expr source; see String
	prog      *vm.Program
	resultPos int // start of the last equation, where non-finite results point
	// vms holds expr VMs (*vm.VM) between runs. A VM keeps its stack and
	// buffers from run to run, which saves allocations, but it weighs a
	// few hundred bytes: one per Program cost every running datapoint that
	// much (issue 18), while only as many run at once as goroutines
	// evaluate. The pool belongs to the compiled formula, not the package,
	// so it goes with the formula's last Program.
	vms sync.Pool
}

// Compile parses src for the given pin names (for example P1 ... P5; names
// are case-sensitive identifiers) and compiles it once for repeated Eval.
// A problem in src is a *SyntaxError; a bad pins list (more than MaxPins,
// a duplicate, or a name that is not an identifier or is reserved) is a
// plain error, since it is the caller's to validate. The Program shares
// nothing with others; use a Cache to share the compiled part.
func Compile(src string, pins []string) (*Program, error) {
	c, err := compile(src, pins)
	if err != nil {
		return nil, err
	}
	return &Program{c: c}, nil
}

// MaxLength is the longest formula Compile takes, in characters. It is
// checked before anything else: the lexer holds a token per character or
// two, so a formula of megabytes would cost gigabytes before maxNodes
// stopped the parser. Real formulas are a few hundred characters.
const MaxLength = 4000

func compile(src string, pins []string) (*compiled, error) {
	if n := utf8.RuneCountInString(src); len(src) > MaxLength && n > MaxLength {
		return nil, &SyntaxError{Line: 1, Col: 1, Msg: fmt.Sprintf("formula too long: %d characters, at most %d", n, MaxLength)}
	}
	if err := checkPins(pins); err != nil {
		return nil, err
	}
	eqs, err := parse(src)
	if err != nil {
		return nil, err
	}
	code, err := generate(src, pins, eqs)
	if err != nil {
		return nil, err
	}
	c := &compiled{src: src, pins: slices.Clone(pins), code: code, resultPos: eqs[len(eqs)-1].pos}
	opts := append(functionOptions(src),
		expr.Env(env{}),
		expr.DisableAllBuiltins(),
		expr.MaxNodes(0), // our parser already bounds the formula's size
	)
	c.prog, err = expr.Compile(code, opts...)
	if err != nil {
		// The generator emits only code it has type-checked; reaching this
		// is a bug here, not in the user's formula.
		return nil, fmt.Errorf("formula: internal error compiling %q: %w", code, err)
	}
	return c, nil
}

func checkPins(pins []string) error {
	if len(pins) > MaxPins {
		return fmt.Errorf("formula: %d pins, at most %d allowed", len(pins), MaxPins)
	}
	for i, name := range pins {
		if !isIdentifier(name) {
			return fmt.Errorf("formula: invalid pin name %q", name)
		}
		if slices.Contains(pins[:i], name) {
			return fmt.Errorf("formula: duplicate pin name %q", name)
		}
	}
	return nil
}

// Source returns the formula as given to Compile.
func (p *Program) Source() string { return p.c.src }

// String returns the generated expr code, for debugging.
func (p *Program) String() string { return p.c.code }

// Eval runs the program with the pins' current values, in the order of
// Compile's pins. ok=false with a nil error means the result is null: emit
// nothing. A non-nil error (a *RuntimeError for division or modulo by zero
// or a non-finite result; a plain error for a wrong number of values or a
// non-finite value) also means emit nothing; the caller logs it.
func (p *Program) Eval(values []float64) (value float64, ok bool, err error) {
	c := p.c
	if len(values) != len(c.pins) {
		return 0, false, fmt.Errorf("formula: %d values for %d pins", len(values), len(c.pins))
	}
	var e env
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, false, fmt.Errorf("formula: pin %q: %w", c.pins[i], ErrNotFinite)
		}
		e.set(i, v)
	}
	m, _ := c.vms.Get().(*vm.VM)
	if m == nil {
		m = new(vm.VM)
	}
	out, err := m.Run(c.prog, e)
	// Run resets the VM at its start, so one that failed is as good as new.
	c.vms.Put(m)
	if err != nil {
		var re *RuntimeError
		if errors.As(err, &re) {
			return 0, false, re
		}
		return 0, false, fmt.Errorf("formula: internal error: %w", err)
	}
	switch v := out.(type) {
	case nil:
		return 0, false, nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, false, newRuntimeError(c.src, c.resultPos, errResultNotFinite)
		}
		return v, true, nil
	}
	return 0, false, fmt.Errorf("formula: internal error: result of type %T", out)
}

// errResultNotFinite reads "result is not a finite number" and matches
// ErrNotFinite.
var errResultNotFinite = fmt.Errorf("result is %w", ErrNotFinite)

func (e *env) set(i int, v float64) {
	switch i {
	case 0:
		e.In0 = v
	case 1:
		e.In1 = v
	case 2:
		e.In2 = v
	case 3:
		e.In3 = v
	case 4:
		e.In4 = v
	case 5:
		e.In5 = v
	case 6:
		e.In6 = v
	case 7:
		e.In7 = v
	}
}
