package codec

import (
	"strconv"
	"unicode/utf8"
)

// jsonScanner reads the few JSON forms the fast decoders accept
// (decodeKafkaFast, decodeObservationsFast): each method consumes what it
// reads unambiguously and reports false for anything else, which sends
// the whole input to encoding/json.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// take consumes c, after whitespace, if it comes next.
func (s *jsonScanner) take(c byte) bool {
	s.skipSpace()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// takeOne consumes c if it comes next, without skipping whitespace.
func (s *jsonScanner) takeOne(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plainString reads a string without escapes or control characters whose
// bytes are valid UTF-8: then its bytes are its value.
func (s *jsonScanner) plainString() ([]byte, bool) {
	if !s.take('"') {
		return nil, false
	}
	start, ascii := s.i, true
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			return v, ascii || utf8.Valid(v)
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// finiteNumber reads a JSON number (RFC 8259 grammar) that is a finite
// float64, parsed from its bytes as encoding/json's callers parse them.
func (s *jsonScanner) finiteNumber() (float64, bool) {
	s.skipSpace()
	start := s.i
	digits := func() bool {
		d := s.i
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
		}
		return s.i > d
	}
	s.takeOne('-')
	if s.takeOne('0') {
		// no more integer digits after a leading zero
	} else if !digits() {
		return 0, false
	}
	if s.takeOne('.') && !digits() {
		return 0, false
	}
	if s.takeOne('e') || s.takeOne('E') {
		if !s.takeOne('+') {
			s.takeOne('-')
		}
		if !digits() {
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	if err != nil {
		return 0, false // out of range: ±Inf
	}
	return v, true
}
