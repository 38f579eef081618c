package codec

import (
	"strconv"
	"unicode/utf8"
)

// decodeKafkaFast decodes the form gateways send, an observation object or
// an array of them with exactly the four fields, without reflection:
// encoding/json was the largest cost of Kafka ingestion, ahead of the
// database. It accepts only what it reads unambiguously (no escapes, no
// null, no other or repeated keys, valid observations) and otherwise
// reports false, leaving dst as it was; DecodeKafka then decodes with
// encoding/json, which gives the same result for everything accepted here
// (FuzzKafkaFastDecode) and the precise reason for everything else.
func decodeKafkaFast(value []byte, dst []KafkaObservation) ([]KafkaObservation, bool) {
	s := jsonScanner{b: value}
	n := len(dst)
	var ok bool
	switch s.skipSpace(); {
	case s.take('{'):
		dst, ok = s.observation(dst)
	case s.take('['):
		dst, ok = s.observations(dst)
	}
	if s.skipSpace(); !ok || s.i != len(s.b) {
		return dst[:n], false
	}
	return dst, true
}

type jsonScanner struct {
	b    []byte
	i    int
	last string // the previous dataPointID, reused when it repeats
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

// observations reads the rest of an array of observation objects.
func (s *jsonScanner) observations(dst []KafkaObservation) ([]KafkaObservation, bool) {
	if s.take(']') {
		return dst, true
	}
	for {
		var ok bool
		if !s.take('{') {
			return dst, false
		}
		if dst, ok = s.observation(dst); !ok {
			return dst, false
		}
		if s.take(']') {
			return dst, true
		}
		if !s.take(',') {
			return dst, false
		}
	}
}

// observation reads the rest of an object with the four fields, in any
// order, and appends it if it is a valid observation.
func (s *jsonScanner) observation(dst []KafkaObservation) ([]KafkaObservation, bool) {
	var o kafkaJSONObservation
	for {
		key, ok := s.plainString()
		if !ok || !s.take(':') {
			return dst, false
		}
		switch string(key) {
		case "project_id":
			ok = !o.ProjectID.set && s.positiveInt(&o.ProjectID)
		case "dataPointID":
			ok = !o.DataPointID.set && s.dataPointID(&o.DataPointID)
		case "time":
			var t []byte
			t, ok = s.plainString()
			ok = ok && !o.Time.set
			o.Time = kafkaJSONString{v: string(t), set: true}
		case "value":
			ok = !o.Value.set && s.finiteNumber(&o.Value)
		default:
			ok = false
		}
		if !ok {
			return dst, false
		}
		if s.take('}') {
			break
		}
		if !s.take(',') {
			return dst, false
		}
	}
	obs, _, err := o.observation()
	if err != nil {
		return dst, false
	}
	return append(dst, obs), true
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

func (s *jsonScanner) dataPointID(dst *kafkaJSONString) bool {
	v, ok := s.plainString()
	if !ok {
		return false
	}
	if string(v) != s.last {
		s.last = string(v)
	}
	*dst = kafkaJSONString{v: s.last, set: true}
	return true
}

// positiveInt reads 1 to 18 digits without a leading zero.
func (s *jsonScanner) positiveInt(dst *kafkaJSONInt) bool {
	s.skipSpace()
	start := s.i
	var v int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' && s.i-start < 18 {
		v = 10*v + int64(s.b[s.i]-'0')
		s.i++
	}
	if s.i == start || s.b[start] == '0' {
		return false
	}
	*dst = kafkaJSONInt{v: v, set: true}
	return true
}

// finiteNumber reads a JSON number (RFC 8259 grammar) that is a finite
// float64.
func (s *jsonScanner) finiteNumber(dst *kafkaJSONNumber) bool {
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
		return false
	}
	if s.takeOne('.') && !digits() {
		return false
	}
	if s.takeOne('e') || s.takeOne('E') {
		if !s.takeOne('+') {
			s.takeOne('-')
		}
		if !digits() {
			return false
		}
	}
	v, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	if err != nil {
		return false // out of range: ±Inf
	}
	*dst = kafkaJSONNumber{v: v, set: true}
	return true
}

// takeOne consumes c if it comes next, without skipping whitespace.
func (s *jsonScanner) takeOne(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}
