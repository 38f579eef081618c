package formula

import "fmt"

// The AST. Every node keeps the byte offset that error messages point at:
// the operator of a binary node, the name of a call, the first character of
// anything else.
type node interface{ at() int }

type numLit struct {
	pos int
	val float64
}

type nullLit struct{ pos int }

type ident struct {
	pos  int
	name string
}

type neg struct {
	pos int
	x   node
}

type binary struct {
	pos  int
	op   tokKind
	text string // the operator as written, for messages ("x" or "*")
	l, r node
}

type call struct {
	pos  int
	name string // as written; functions are matched case-insensitively
	args []node
}

func (n *numLit) at() int  { return n.pos }
func (n *nullLit) at() int { return n.pos }
func (n *ident) at() int   { return n.pos }
func (n *neg) at() int     { return n.pos }
func (n *binary) at() int  { return n.pos }
func (n *call) at() int    { return n.pos }

// equation is one ";"-terminated part of a formula; target is nil when it is
// a plain expression rather than an assignment.
type equation struct {
	pos    int
	target *ident
	expr   node
}

// Limits that keep Compile's time, memory and recursion bounded on hostile
// input (formulas arrive through the public API). Real formulas are far
// below them.
const (
	maxDepth = 256  // nested parseExpr calls: one or two per parenthesis, call or unary minus
	maxNodes = 2000 // AST nodes
)

// Binding power of the binary operators, loosest first. Unary minus binds
// tighter than all of them and is handled in parseUnary.
const (
	precOr = 1 + iota
	precAnd
	precCompare
	precSum
	precProduct
)

func precedence(k tokKind) int {
	switch k {
	case tOr:
		return precOr
	case tAnd:
		return precAnd
	case tEq, tNe, tLt, tGt, tLe, tGe:
		return precCompare
	case tPlus, tMinus:
		return precSum
	case tMul, tDiv, tMod:
		return precProduct
	}
	return 0
}

type parser struct {
	src   string
	toks  []token
	i     int
	depth int
	nodes int
	err   *SyntaxError
}

// bailout unwinds the recursive descent on the first error; parse recovers
// it, and only it, so a bug elsewhere still crashes loudly in tests.
type bailout struct{}

func parse(src string) (eqs []equation, err error) {
	p := &parser{src: src, toks: lex(src)}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(bailout); !ok {
				panic(r)
			}
			eqs, err = nil, p.err
		}
	}()
	return p.parseFormula(), nil
}

func (p *parser) peek() token  { return p.toks[p.i] }
func (p *parser) peek2() token { return p.toks[min(p.i+1, len(p.toks)-1)] }
func (p *parser) next() token  { t := p.toks[p.i]; p.i = min(p.i+1, len(p.toks)-1); return t }
func (p *parser) where(pos int) string {
	line, col := lineCol(p.src, pos)
	return fmt.Sprintf("%d:%d", line, col)
}

func (p *parser) fail(pos int, format string, args ...any) {
	p.err = newSyntaxError(p.src, pos, fmt.Sprintf(format, args...))
	panic(bailout{})
}

// unexpected reports t where something else was needed.
func (p *parser) unexpected(t token) {
	switch t.kind {
	case tIllegal:
		p.fail(t.pos, "%s", t.text)
	case tEOF:
		p.fail(t.pos, "unexpected end of formula")
	case tAssign:
		p.fail(t.pos, `unexpected "=" (use "==" to compare)`)
	}
	p.fail(t.pos, "unexpected %s", t.describe())
}

func (p *parser) count(pos int) {
	if p.nodes++; p.nodes > maxNodes {
		p.fail(pos, "formula too long (more than %d terms)", maxNodes)
	}
}

func (p *parser) parseFormula() []equation {
	if p.peek().kind == tEOF {
		p.fail(0, "empty formula")
	}
	var eqs []equation
	for {
		eqs = append(eqs, p.parseEquation())
		t := p.peek()
		switch {
		case t.kind == tEOF:
			return eqs // the final ";" is optional
		case t.kind == tSemi:
			p.next()
			if p.peek().kind == tEOF {
				return eqs
			}
		case t.startsOperand():
			p.fail(t.pos, "missing \";\" before %s", t.describe())
		default:
			p.unexpected(t)
		}
	}
}

func (p *parser) parseEquation() equation {
	t := p.peek()
	eq := equation{pos: t.pos}
	if t.kind == tIdent && p.peek2().kind == tAssign {
		p.next()
		p.next()
		p.count(t.pos)
		eq.target = &ident{pos: t.pos, name: t.text}
	}
	eq.expr = p.parseExpr(0)
	return eq
}

// parseExpr is a precedence climber: it parses operands joined by binary
// operators binding at least minPrec, left-associatively.
func (p *parser) parseExpr(minPrec int) node {
	if p.depth++; p.depth > maxDepth {
		p.fail(p.peek().pos, "formula nested too deeply")
	}
	defer func() { p.depth-- }()

	left := p.parseUnary()
	compared := false
	for {
		t := p.peek()
		prec := precedence(t.kind)
		if prec == 0 || prec < minPrec {
			return left
		}
		if prec == precCompare && compared {
			// a < b < c reads like a range test but would compare a
			// boolean with c; make the user spell out the AND.
			p.fail(t.pos, "comparisons cannot be chained; combine them with AND")
		}
		p.next()
		p.count(t.pos)
		right := p.parseExpr(prec + 1)
		left = &binary{pos: t.pos, op: t.kind, text: t.text, l: left, r: right}
		compared = prec == precCompare
	}
}

func (p *parser) parseUnary() node {
	t := p.peek()
	if t.kind == tMinus {
		p.next()
		p.count(t.pos)
		return &neg{pos: t.pos, x: p.parseExpr(precProduct + 1)}
	}
	return p.parsePrimary()
}

func (p *parser) parsePrimary() node {
	t := p.next()
	p.count(t.pos)
	switch t.kind {
	case tNum:
		return &numLit{pos: t.pos, val: t.num}
	case tNull:
		return &nullLit{pos: t.pos}
	case tIdent:
		if p.peek().kind == tLParen {
			return p.parseCall(t)
		}
		return &ident{pos: t.pos, name: t.text}
	case tLParen:
		x := p.parseExpr(0)
		if c := p.next(); c.kind != tRParen {
			p.closeFail(`")"`, t, c)
		}
		return x
	}
	p.unexpected(t)
	return nil // unreachable: unexpected always bails out
}

func (p *parser) parseCall(name token) node {
	open := p.next()
	c := &call{pos: name.pos, name: name.text}
	if p.peek().kind == tRParen {
		p.next()
		return c
	}
	for {
		c.args = append(c.args, p.parseExpr(0))
		switch t := p.next(); t.kind {
		case tComma:
		case tRParen:
			return c
		default:
			p.closeFail(`"," or ")"`, open, t)
		}
	}
}

// closeFail reports found where a closing parenthesis (or a comma) was
// expected, naming the opening parenthesis so unbalanced input is easy to fix.
func (p *parser) closeFail(want string, open, found token) {
	if found.kind == tIllegal {
		p.unexpected(found)
	}
	hint := ""
	if found.kind == tAssign {
		hint = ` (use "==" to compare)`
	}
	p.fail(found.pos, `expected %s to close "(" at %s, found %s%s`, want, p.where(open.pos), found.describe(), hint)
}
