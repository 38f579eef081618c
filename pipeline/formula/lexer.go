package formula

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF     tokKind = iota
	tIllegal         // text holds the message; reported only when the parser reaches it
	tNum
	tIdent
	tNull
	tAnd
	tOr
	tLParen
	tRParen
	tComma
	tSemi
	tAssign
	tEq
	tNe
	tLt
	tGt
	tLe
	tGe
	tPlus
	tMinus
	tMul // both "*" and "x"
	tDiv
	tMod
)

type token struct {
	kind tokKind
	pos  int     // byte offset of the first character
	text string  // source text, or the message of a tIllegal token
	num  float64 // value of a tNum
}

// describe renders a token for error messages: its source text in quotes.
func (t token) describe() string {
	if t.kind == tEOF {
		return "end of formula"
	}
	return strconv.Quote(t.text)
}

// startsOperand reports whether t can begin an expression. The parser uses it
// to tell a missing ";" between equations from other unexpected tokens.
func (t token) startsOperand() bool {
	switch t.kind {
	case tNum, tIdent, tNull, tLParen:
		return true
	}
	return false
}

// lex splits src into tokens, always ending with tEOF. It never fails: a bad
// character becomes a tIllegal token so that the parser reports the leftmost
// error of any kind, lexical or syntactic.
func lex(src string) []token {
	var toks []token
	// afterOperand is true when the previous token ended an operand; only then
	// is a letter x the multiplication operator (see the package doc).
	afterOperand := false
	i := 0
	for i < len(src) {
		c := src[i]
		if isSpace(c) {
			i++
			continue
		}
		t := token{pos: i}
		switch {
		case c == 'x' && afterOperand && !startsAssignment(src, i):
			t.kind, t.text = tMul, "x"
			i++
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			i = lexNumber(src, i, &t)
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			t.text = src[i:j]
			t.kind = keyword(t.text)
			i = j
		default:
			i = lexOperator(src, i, &t)
		}
		toks = append(toks, t)
		switch t.kind {
		case tNum, tIdent, tNull, tRParen:
			afterOperand = true
		default:
			afterOperand = false
		}
	}
	return append(toks, token{kind: tEOF, pos: len(src)})
}

// startsAssignment reports whether the name at i is followed by "=" (not
// "=="). An x there cannot be a multiplication, as no operand starts with
// "="; lexing it as a name turns "a = P1 <newline> x = 2" into a clear
// missing-";" error instead of an unexpected "=".
func startsAssignment(src string, i int) bool {
	for i < len(src) && isIdentPart(src[i]) {
		i++
	}
	for i < len(src) && isSpace(src[i]) {
		i++
	}
	return i < len(src) && src[i] == '=' && (i+1 == len(src) || src[i+1] != '=')
}

// lexNumber scans digits [. digits] [e [+-] digits] starting at i and returns
// the offset after it. A letter, digit, "_" or "." glued to the number makes
// it malformed, except an x, which multiplies (2x3).
func lexNumber(src string, i int, t *token) int {
	j := i
	for j < len(src) && isDigit(src[j]) {
		j++
	}
	if j < len(src) && src[j] == '.' {
		j++
		for j < len(src) && isDigit(src[j]) {
			j++
		}
	}
	if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
		k := j + 1
		if k < len(src) && (src[k] == '+' || src[k] == '-') {
			k++
		}
		if k < len(src) && isDigit(src[k]) {
			for k < len(src) && isDigit(src[k]) {
				k++
			}
			j = k
		}
	}
	end := j
	for end < len(src) && (isIdentPart(src[end]) || src[end] == '.') && !(end == j && src[end] == 'x') {
		end++
	}
	t.text = src[i:end]
	if end != j {
		t.kind, t.text = tIllegal, fmt.Sprintf("malformed number %q", src[i:end])
		return end
	}
	v, err := strconv.ParseFloat(t.text, 64)
	if err != nil {
		// ParseFloat accepts everything the scanner does, so only range errors remain.
		t.kind, t.text = tIllegal, fmt.Sprintf("number %q out of range", src[i:end])
		return end
	}
	t.kind, t.num = tNum, v
	return end
}

func lexOperator(src string, i int, t *token) int {
	if i+1 < len(src) && src[i+1] == '=' {
		t.text = src[i : i+2]
		switch src[i] {
		case '=':
			t.kind = tEq
		case '!':
			t.kind = tNe
		case '<':
			t.kind = tLe
		case '>':
			t.kind = tGe
		}
		if t.kind != tEOF {
			return i + 2
		}
	}
	t.text = src[i : i+1]
	switch src[i] {
	case '(':
		t.kind = tLParen
	case ')':
		t.kind = tRParen
	case ',':
		t.kind = tComma
	case ';':
		t.kind = tSemi
	case '=':
		t.kind = tAssign
	case '<':
		t.kind = tLt
	case '>':
		t.kind = tGt
	case '+':
		t.kind = tPlus
	case '-':
		t.kind = tMinus
	case '*':
		t.kind = tMul
	case '/':
		t.kind = tDiv
	case '%':
		t.kind = tMod
	default:
		r, size := utf8.DecodeRuneInString(src[i:])
		t.kind, t.text = tIllegal, fmt.Sprintf("invalid character %q", string(r))
		if r == utf8.RuneError && size <= 1 {
			t.text = fmt.Sprintf("invalid byte %#02x", src[i])
		}
		return i + size
	}
	return i + 1
}

// keyword classifies an identifier. AND, OR and null are reserved in any
// letter case, so they can name neither pins nor variables.
func keyword(s string) tokKind {
	// EqualFold rather than a switch on ToLower, which allocates for every
	// name with a capital (P1); identifiers are ASCII, so the two agree.
	switch {
	case strings.EqualFold(s, "and"):
		return tAnd
	case strings.EqualFold(s, "or"):
		return tOr
	case strings.EqualFold(s, "null"):
		return tNull
	}
	return tIdent
}

func isSpace(c byte) bool      { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool      { return '0' <= c && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }
func isIdentPart(c byte) bool  { return isIdentStart(c) || isDigit(c) }

// isIdentifier reports whether s is a valid, non-reserved name (for pins).
func isIdentifier(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentPart(s[i]) {
			return false
		}
	}
	return keyword(s) == tIdent
}
