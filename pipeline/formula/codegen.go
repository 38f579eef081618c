package formula

import (
	"fmt"
	"strconv"
	"strings"
)

// typ is the static type of a subexpression. The checker knows every type at
// compile time, so conversions are baked into the generated code and the
// expr program never meets a value of an unexpected type.
type typ uint8

const (
	tyNum       typ = iota
	tyBool          // comparisons, AND, OR
	tyNull          // the literal null
	tyNumOrNull     // if/elif with a null branch; only in result position
)

type variable struct {
	slot string // its name in the generated expr code
	ty   typ
}

// generator type-checks the AST and translates it to expr source, in which
// pin i is the env field In<i>, variables are let-bound v<N>_<name> (a new
// slot for every assignment, so reassignment needs no mutation), temporaries
// are t<N>, and the functions are f_<name> (see funcs.go). The prefixes keep
// user names apart from expr keywords and builtins.
type generator struct {
	src     string
	pins    map[string]int
	vars    map[string]variable
	targets map[string]bool // every assigned name, for "used before its assignment"
	names   []string        // pins, then assigned names, in order: "did you mean" candidates
	slots   int
	err     *SyntaxError
}

func generate(src string, pins []string, eqs []equation) (code string, err error) {
	g := &generator{src: src, pins: map[string]int{}, vars: map[string]variable{}, targets: map[string]bool{}}
	for i, name := range pins {
		g.pins[name] = i
		g.names = append(g.names, name)
	}
	for _, eq := range eqs {
		if eq.target != nil {
			g.targets[eq.target.name] = true
			g.names = append(g.names, eq.target.name)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				panic(r)
			}
			code, err = "", g.err
		}
	}()
	var b strings.Builder
	for i, eq := range eqs {
		if eq.target != nil {
			if _, isPin := g.pins[eq.target.name]; isPin {
				g.fail(eq.target.pos, "cannot assign to pin %q", eq.target.name)
			}
		}
		if i == len(eqs)-1 {
			// The last equation is the result, assignment or not.
			c, ty := g.gen(eq.expr, true)
			b.WriteString(g.coerce(c, ty, tyNum))
			break
		}
		if eq.target == nil {
			g.fail(eq.pos, "only the last equation may be a plain expression; assign this one to a variable or remove it")
		}
		c, ty := g.gen(eq.expr, false)
		v := variable{slot: g.slot("v") + "_" + eq.target.name, ty: ty}
		fmt.Fprintf(&b, "let %s = %s; ", v.slot, c)
		g.vars[eq.target.name] = v
	}
	return b.String(), nil
}

func (g *generator) fail(pos int, format string, args ...any) {
	g.err = newSyntaxError(g.src, pos, fmt.Sprintf(format, args...))
	panic(bailout{})
}

func (g *generator) slot(prefix string) string {
	g.slots++
	return prefix + strconv.Itoa(g.slots)
}

// gen translates n. result is true in result position (the last equation
// and the branches of an if/elif there), the only place null may appear.
func (g *generator) gen(n node, result bool) (string, typ) {
	switch n := n.(type) {
	case *numLit:
		return formatNum(n.val), tyNum
	case *nullLit:
		if !result {
			g.fail(n.pos, "null can only be the result (the last equation, or an if/elif branch there)")
		}
		return "nil", tyNull
	case *ident:
		return g.ident(n)
	case *neg:
		return "(-" + g.num(n.x) + ")", tyNum
	case *binary:
		return g.binary(n)
	case *call:
		return g.call(n, result)
	}
	panic(fmt.Sprintf("formula: unknown node %T", n))
}

// num and cond generate n where a number or a condition is needed, applying
// the documented conversions (true is 1, a number is true when non-zero).
func (g *generator) num(n node) string {
	c, ty := g.gen(n, false)
	return g.coerce(c, ty, tyNum)
}

func (g *generator) cond(n node) string {
	c, ty := g.gen(n, false)
	return g.coerce(c, ty, tyBool)
}

func (g *generator) coerce(code string, from, to typ) string {
	switch {
	case from == tyBool && (to == tyNum || to == tyNumOrNull):
		return "(" + code + " ? 1.0 : 0.0)"
	case from == tyNum && to == tyBool:
		return "(" + code + " != 0.0)"
	}
	return code
}

func (g *generator) ident(n *ident) (string, typ) {
	if i, ok := g.pins[n.name]; ok {
		return "In" + strconv.Itoa(i), tyNum
	}
	if v, ok := g.vars[n.name]; ok {
		return v.slot, v.ty
	}
	if g.targets[n.name] {
		g.fail(n.pos, "%q is used before its assignment", n.name)
	}
	for _, name := range g.names {
		if strings.EqualFold(name, n.name) {
			g.fail(n.pos, "unknown identifier %q (did you mean %q?)", n.name, name)
		}
	}
	g.fail(n.pos, "unknown identifier %q", n.name)
	return "", 0
}

var exprOps = map[tokKind]string{
	tAnd: "and", tOr: "or",
	tEq: "==", tNe: "!=", tLt: "<", tGt: ">", tLe: "<=", tGe: ">=",
	tPlus: "+", tMinus: "-", tMul: "*",
}

func (g *generator) binary(n *binary) (string, typ) {
	switch n.op {
	case tAnd, tOr:
		// expr's and/or short-circuit, as documented for the formula language.
		return "(" + g.cond(n.l) + " " + exprOps[n.op] + " " + g.cond(n.r) + ")", tyBool
	case tEq, tNe, tLt, tGt, tLe, tGe:
		return "(" + g.num(n.l) + " " + exprOps[n.op] + " " + g.num(n.r) + ")", tyBool
	case tDiv:
		return g.division(n), tyNum
	case tMod:
		return fmt.Sprintf("f_mod(%s, %s, %d)", g.num(n.l), g.num(n.r), n.pos), tyNum
	}
	return "(" + g.num(n.l) + " " + exprOps[n.op] + " " + g.num(n.r) + ")", tyNum
}

// division tests the divisor inline and calls f_divzero, which fails the
// run, only when it is zero: the common path stays on expr's own opcodes.
func (g *generator) division(n *binary) string {
	l, r := g.num(n.l), g.num(n.r)
	if lit, ok := n.r.(*numLit); ok && lit.val != 0 {
		return "(" + l + " / " + r + ")"
	}
	pre := ""
	if !isSimple(n.r) {
		// The divisor is used twice, so bind it once. Bind a complex
		// dividend first so that evaluation (and which error wins) stays
		// left to right.
		if !isSimple(n.l) {
			t := g.slot("t")
			pre, l = "let "+t+" = "+l+"; ", t
		}
		t := g.slot("t")
		pre, r = pre+"let "+t+" = "+r+"; ", t
	}
	return fmt.Sprintf("(%s%s == 0.0 ? f_divzero(%d) : %s / %s)", pre, r, n.pos, l, r)
}

// isSimple reports whether evaluating n twice costs nothing and cannot fail.
func isSimple(n node) bool {
	switch n.(type) {
	case *numLit, *ident:
		return true
	}
	return false
}

// formatNum renders v so that expr reads it back as the same float64 (not
// an int): 'g' with the shortest exact digits, plus ".0" when needed.
func formatNum(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
