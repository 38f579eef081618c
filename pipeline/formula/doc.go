// Package formula implements the formula language of the formula virtual
// datapoint (api.md 2.11): it compiles a formula once per configuration and
// evaluates it each time a pin delivers a value.
//
//	p, err := formula.Compile("a = P1 + P2; if(a > 20, a x 2, null);", []string{"P1", "P2"})
//	// err is a *SyntaxError: report it (400), create nothing.
//	v, ok, err := p.Eval([]float64{12.5, 9})
//	// err != nil: emit nothing, log err. !ok: the result is null, emit nothing.
//	// Otherwise emit v.
//
// # The language
//
// A formula is a sequence of equations separated by semicolons and executed
// from left to right. Every equation but the last must assign a variable
// (name = expression); the last one is the result, and may be an assignment
// too, whose value is then the result. The final semicolon may be omitted.
// Spaces, tabs and newlines may appear between any two tokens. A formula
// with no equation is an error.
//
// Numbers are decimal: 12, 0.5, .5, 5., 1e3, 2.5E-4. There are no hex
// literals and no digit separators; a number that overflows float64 is an
// error. All arithmetic is float64.
//
// Identifiers are ASCII letters, digits and underscores, not starting with a
// digit, and case-sensitive. An identifier is a pin (its value is the pin's
// value, supplied to Eval) or a variable assigned by an earlier equation.
// Anything else is an error naming it. Assigning to a pin is an error;
// assigning a variable again is allowed and later equations see the new
// value. AND, OR and null are reserved in any letter case.
//
// Operators, loosest first; all binary ones are left-associative:
//
//	OR               logical or (also or, Or, ...)
//	AND              logical and
//	== != < > <= >=  comparison; a < b < c is an error (write a < b AND b < c)
//	+ -              addition, subtraction
//	* x / %          multiplication, division, modulo
//	-                unary minus
//
// Parentheses group as usual. There is no unary plus and no NOT (compare
// instead: P1 <= 0).
//
// x multiplies only where an operator is expected, that is right after an
// operand (a number, a name, null or ")"): P1 x P2, (P1)x(P2), 2x3 and 2xP1
// all multiply. Elsewhere x is an ordinary identifier, so x = 3; x x x is 9.
// An x inside a longer name is part of the name: P1xP2 is one (unknown)
// identifier, so write P1 x P2.
//
// % is the remainder of truncated division, Go's math.Mod: the result has
// the sign of the dividend (-7 % 3 is -1) and operands may be fractional
// (7.5 % 2 is 1.5).
//
// Comparisons, AND and OR yield booleans. A boolean used as a number is 1
// (true) or 0 (false), so (P1 > 20) + (P2 > 20) counts, and a boolean result
// is emitted as 1 or 0. A number used as a condition (of if, elif, AND, OR)
// is true when it is not zero. AND and OR evaluate their right side only
// when needed: P1 != 0 AND 10 / P1 > 2 never divides by zero.
//
// # Functions
//
// Function names are matched in any letter case; each call is checked for
// its number of arguments when compiling.
//
//	min, max, mean, median  one or more arguments; median of an even count
//	                        is the mean of the two middle values
//	abs, sin, cos, tan      exactly one argument; angles in radians
//	round(v)                nearest integer, halves away from zero (round(-2.5) is -3)
//	round(v, d)             to d decimal digits; d an integer constant from -15 to 15,
//	                        negative d rounds to tens, hundreds, ... (round(1234, -2) is 1200)
//	if(c, then, else)       then when c holds, else otherwise
//	elif(c1, v1, c2, v2, ..., else)
//	                        the value after the first condition that holds, else the last
//	                        argument; an odd number of arguments, at least 3. The spec's
//	                        doubled form elif(c1, v1, c2, v2, else, else) is accepted when
//	                        both trailing arguments are the same expression.
//
// if and elif evaluate only the branch they take, so
// if(P2 != 0, P1 / P2, 0) is safe. If one branch is a number and another a
// boolean, the boolean becomes 1 or 0.
//
// # null
//
// null as the result means "emit nothing" (Eval returns ok=false). It may
// appear only in result position: as the last equation, or as a branch of
// if or elif there, possibly nested: if(P1 > 0, if(P2 > 0, P2, null), null).
// Anywhere else (a = null; null + 1; max(P1, null)) it is a compile error,
// so null never has to be given a meaning in arithmetic.
//
// # Errors
//
// Compile returns a *SyntaxError with the position (line:col, 1-based, and
// the byte offset) of the first problem, messages in the form
// `formula: 1:7: unexpected ";"`. Syntax problems are found before name and
// argument-count problems.
//
// Eval fails, and the caller emits nothing, on division or modulo by zero
// (never Inf or NaN), on a result that is not finite (for example after an
// overflow), and on a pin value that is NaN or infinite. A *RuntimeError
// carries the position of the failing operator or, for the result, of the
// last equation; errors.Is matches ErrDivisionByZero, ErrModuloByZero and
// ErrNotFinite. Non-finite intermediate values are not checked
// individually; they fail the evaluation only if they reach the result.
//
// # Implementation
//
// A hand-written lexer and precedence-climbing parser build an AST (lexer.go,
// parser.go). A checker assigns each subexpression a static type (number,
// boolean, null) and translates the AST into expr-lang source (codegen.go,
// calls.go), inserting the boolean/number conversions, a zero test before
// each division and ternaries for if and elif, which evaluate lazily. Pins
// become fields of a small env struct and variables become let bindings,
// so no maps are involved at run time. That source is compiled once with
// expr.Compile; Eval runs it on a vm.VM taken from a pool that belongs to
// the compiled formula. A Cache lets Programs of the same formula share the
// compiled part and its pool (cache.go). Functions are expr.Function closures
// without mutable state (funcs.go). Parsing ourselves keeps the language
// exactly ours (x as an operator, null, elif, error positions in the user's
// text) while expr supplies a tested, fast bytecode VM.
//
// Eval of a typical five-pin formula takes well under a microsecond and a
// few small allocations: expr's stack holds interface values, so each
// float64 an operator produces is boxed, and the env struct is boxed once
// per run.
package formula
