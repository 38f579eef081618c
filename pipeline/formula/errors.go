package formula

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// SyntaxError is what Compile returns for a formula it rejects: bad syntax,
// an unknown name, a wrong number of arguments and the like. The API layer
// can show Line:Col to the user; Pos is for tools that highlight the source.
type SyntaxError struct {
	Pos  int // 0-based byte offset into the source
	Line int // 1-based
	Col  int // 1-based, counted in characters (runes), a tab counting as one
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("formula: %d:%d: %s", e.Line, e.Col, e.Msg)
}

func newSyntaxError(src string, pos int, msg string) *SyntaxError {
	line, col := lineCol(src, pos)
	return &SyntaxError{Pos: pos, Line: line, Col: col, Msg: msg}
}

// Sentinels for the runtime failures, to test with errors.Is.
var (
	ErrDivisionByZero = errors.New("division by zero")
	ErrModuloByZero   = errors.New("modulo by zero")
	ErrNotFinite      = errors.New("not a finite number")
)

// RuntimeError is a failure of one evaluation. It points at the operator
// that failed, or at the last equation for a non-finite result, so a log
// line says where to look; errors.Is matches the sentinel in Err.
type RuntimeError struct {
	Pos, Line, Col int
	Err            error
}

func (e *RuntimeError) Error() string {
	return fmt.Sprintf("formula: %d:%d: %v", e.Line, e.Col, e.Err)
}

func (e *RuntimeError) Unwrap() error { return e.Err }

func newRuntimeError(src string, pos int, err error) *RuntimeError {
	line, col := lineCol(src, pos)
	return &RuntimeError{Pos: pos, Line: line, Col: col, Err: err}
}

// lineCol converts a byte offset to a 1-based line and character column.
func lineCol(src string, pos int) (line, col int) {
	pos = min(max(pos, 0), len(src))
	before := src[:pos]
	start := strings.LastIndexByte(before, '\n') + 1
	return strings.Count(before, "\n") + 1, utf8.RuneCountInString(before[start:]) + 1
}
