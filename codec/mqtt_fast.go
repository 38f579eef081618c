package codec

import "time"

// minObservationJSON is the length of the shortest observation the fast
// decoder accepts plus its comma: {"time":"2006-01-02T15:04:05Z","value":1},
// so that len(payload)/minObservationJSON+1 bounds the observations of a
// payload and the result is allocated once.
const minObservationJSON = 42

// decodeObservationsFast decodes the form publishers send, an observation
// object or an array of them with exactly "time" and "value", without
// reflection: encoding/json into maps was the largest cost of MQTT
// ingestion. It accepts only what it reads unambiguously (no escapes, no
// null, no other or repeated keys, no empty or oversized array, valid
// observations) and otherwise reports false; DecodeObservations then
// decodes with encoding/json, which gives the same result for everything
// accepted here (FuzzMQTTFastDecode) and the precise reason for
// everything else.
func decodeObservationsFast(payload []byte) ([]TimeValue, bool) {
	s := jsonScanner{b: payload}
	var out []TimeValue
	ok := false
	switch {
	case s.take('{'):
		var tv TimeValue
		if tv, ok = observationFast(&s); ok {
			out = []TimeValue{tv}
		}
	case s.take('['):
		out, ok = observationsFast(&s, make([]TimeValue, 0, min(len(payload)/minObservationJSON+1, MaxObservationsPerMessage)))
	}
	if s.skipSpace(); !ok || s.i != len(s.b) {
		return nil, false
	}
	return out, true
}

// observationsFast reads the rest of a non-empty array of at most
// MaxObservationsPerMessage observation objects.
func observationsFast(s *jsonScanner, dst []TimeValue) ([]TimeValue, bool) {
	for len(dst) < MaxObservationsPerMessage {
		if !s.take('{') {
			return nil, false
		}
		tv, ok := observationFast(s)
		if !ok {
			return nil, false
		}
		dst = append(dst, tv)
		if s.take(']') {
			return dst, true
		}
		if !s.take(',') {
			return nil, false
		}
	}
	return nil, false
}

// observationFast reads the rest of an object with "time" and "value",
// in either order.
func observationFast(s *jsonScanner) (TimeValue, bool) {
	var tv TimeValue
	var hasTime, hasValue bool
	for {
		key, ok := s.plainString()
		if !ok || !s.take(':') {
			return TimeValue{}, false
		}
		switch string(key) {
		case "time":
			var raw []byte
			if raw, ok = s.plainString(); ok && !hasTime {
				tv.Time, ok = parseObservationTime(raw)
			}
			ok = ok && !hasTime
			hasTime = true
		case "value":
			tv.Value, ok = s.finiteNumber()
			ok = ok && !hasValue
			hasValue = true
		default:
			ok = false
		}
		if !ok {
			return TimeValue{}, false
		}
		if s.take('}') {
			return tv, hasTime && hasValue
		}
		if !s.take(',') {
			return TimeValue{}, false
		}
	}
}

// parseObservationTime is ParseRFC3339 with the same result. The UTC form
// YYYY-MM-DDThh:mm:ss[.frac]Z (T and Z in either case) is read by
// parseRFC3339ish, which for exactly that shape agrees with time.Parse to
// the bit (location UTC); a time with an offset goes to ParseRFC3339
// itself, whose location (Local or a fixed zone) is its own to choose.
func parseObservationTime(b []byte) (time.Time, bool) {
	if isUTCRFC3339(b) {
		return parseRFC3339ish(b)
	}
	t, err := ParseRFC3339(string(b))
	return t, err == nil
}

// isUTCRFC3339 tells whether b has the shape YYYY-MM-DDThh:mm:ss[.d+]Z
// with every field of exactly its digits (the ranges are
// parseRFC3339ish's to check).
func isUTCRFC3339(b []byte) bool {
	const shape = "dddd-dd-ddTdd:dd:dd"
	if len(b) < len(shape)+1 {
		return false
	}
	for i := range len(shape) {
		c := b[i]
		switch shape[i] {
		case 'd':
			if c < '0' || c > '9' {
				return false
			}
		case 'T':
			if c != 'T' && c != 't' {
				return false
			}
		default:
			if c != shape[i] {
				return false
			}
		}
	}
	rest := b[len(shape):]
	if rest[0] == '.' {
		n := 1
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == 1 {
			return false
		}
		rest = rest[n:]
	}
	return len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z')
}
