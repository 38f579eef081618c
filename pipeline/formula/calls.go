package formula

import (
	"fmt"
	"math"
	"strings"
)

// Arity of the plain functions; if, elif and round are handled separately.
var functions = map[string]struct{ variadic bool }{
	"min": {true}, "max": {true}, "mean": {true}, "median": {true},
	"abs": {false}, "sin": {false}, "cos": {false}, "tan": {false},
}

// maxRoundDigits bounds round's second argument: beyond 15 decimal digits a
// float64 has nothing left to round.
const maxRoundDigits = 15

func (g *generator) call(n *call, result bool) (string, typ) {
	name := strings.ToLower(n.name)
	switch name {
	case "if":
		if len(n.args) != 3 {
			g.fail(n.pos, "%s takes 3 arguments (condition, then, else), got %d", n.name, len(n.args))
		}
		return g.branches(n.args, result)
	case "elif":
		args := n.args
		// The spec writes elif(c1,v1,c2,v2,else,else); accept that doubled
		// else, but only when both copies are the same expression, so that
		// a forgotten else is still an error rather than a guess.
		if len(args) >= 4 && len(args)%2 == 0 && sameNode(args[len(args)-2], args[len(args)-1]) {
			args = args[:len(args)-1]
		}
		if len(args) < 3 || len(args)%2 == 0 {
			g.fail(n.pos, "%s takes condition, value pairs and then one else value (an odd number of arguments, at least 3), got %d", n.name, len(n.args))
		}
		return g.branches(args, result)
	case "round":
		return g.round(n), tyNum
	}
	f, ok := functions[name]
	if !ok {
		g.fail(n.pos, "unknown function %q", n.name)
	}
	switch {
	case f.variadic && len(n.args) == 0:
		g.fail(n.pos, "%s takes at least 1 argument, got 0", n.name)
	case !f.variadic && len(n.args) != 1:
		g.fail(n.pos, "%s takes 1 argument, got %d", n.name, len(n.args))
	case f.variadic && len(n.args) == 1:
		return g.num(n.args[0]), tyNum // min, max, mean, median of one value is that value
	}
	args := make([]string, len(n.args))
	for i, a := range n.args {
		args[i] = g.num(a)
	}
	return "f_" + name + "(" + strings.Join(args, ", ") + ")", tyNum
}

// branches generates cond1, value1, cond2, value2, ..., else as nested expr
// ternaries, which evaluate only the taken branch. The branches share one
// type: a number if any branch is a number, nullable if any is null.
func (g *generator) branches(args []node, result bool) (string, typ) {
	conds := make([]string, 0, len(args)/2)
	vals := make([]string, 0, len(args)/2+1)
	types := make([]typ, 0, len(args)/2+1)
	var hasNum, hasBool, hasNull bool
	for i, a := range args {
		if i%2 == 0 && i != len(args)-1 {
			conds = append(conds, g.cond(a))
			continue
		}
		c, ty := g.gen(a, result)
		vals, types = append(vals, c), append(types, ty)
		hasNum = hasNum || ty == tyNum || ty == tyNumOrNull
		hasBool = hasBool || ty == tyBool
		hasNull = hasNull || ty == tyNull || ty == tyNumOrNull
	}
	var joint typ
	switch {
	case !hasNum && !hasBool:
		joint = tyNull
	case hasNull:
		joint = tyNumOrNull
	case hasNum:
		joint = tyNum
	default:
		joint = tyBool
	}
	code := g.coerce(vals[len(vals)-1], types[len(vals)-1], joint)
	for i := len(conds) - 1; i >= 0; i-- {
		code = "(" + conds[i] + " ? " + g.coerce(vals[i], types[i], joint) + " : " + code + ")"
	}
	return code, joint
}

// round(v) rounds half away from zero; round(v, d) to d decimal digits
// (negative d rounds to tens, hundreds, ...). d must be a constant so that a
// bad value is a compile error rather than a runtime surprise.
func (g *generator) round(n *call) string {
	if len(n.args) != 1 && len(n.args) != 2 {
		g.fail(n.pos, "%s takes 1 or 2 arguments, got %d", n.name, len(n.args))
	}
	v := g.num(n.args[0])
	if len(n.args) == 1 {
		return "f_round(" + v + ")"
	}
	d, ok := intConst(n.args[1])
	if !ok || d < -maxRoundDigits || d > maxRoundDigits {
		g.fail(n.args[1].at(), "%s: the number of digits must be an integer constant from %d to %d", n.name, -maxRoundDigits, maxRoundDigits)
	}
	if d == 0 {
		return "f_round(" + v + ")"
	}
	return fmt.Sprintf("f_roundn(%s, %d)", v, d)
}

// intConst returns the value of an integer literal, optionally negated.
func intConst(n node) (int, bool) {
	sign := 1.0
	if m, ok := n.(*neg); ok {
		sign, n = -1, m.x
	}
	lit, ok := n.(*numLit)
	if !ok || lit.val != math.Trunc(lit.val) || lit.val > 1e9 {
		return 0, false
	}
	return int(sign * lit.val), true
}

// sameNode reports whether a and b are the same expression, ignoring
// positions.
func sameNode(a, b node) bool {
	switch a := a.(type) {
	case *numLit:
		b, ok := b.(*numLit)
		return ok && a.val == b.val
	case *nullLit:
		_, ok := b.(*nullLit)
		return ok
	case *ident:
		b, ok := b.(*ident)
		return ok && a.name == b.name
	case *neg:
		b, ok := b.(*neg)
		return ok && sameNode(a.x, b.x)
	case *binary:
		b, ok := b.(*binary)
		return ok && a.op == b.op && sameNode(a.l, b.l) && sameNode(a.r, b.r)
	case *call:
		b, ok := b.(*call)
		if !ok || !strings.EqualFold(a.name, b.name) || len(a.args) != len(b.args) {
			return false
		}
		for i := range a.args {
			if !sameNode(a.args[i], b.args[i]) {
				return false
			}
		}
		return true
	}
	return false
}
