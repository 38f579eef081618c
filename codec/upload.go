package codec

// ScanUpload reads the body of a timeseries upload, a JSON object mapping
// dataPointID to an array of {"time", "value"} objects, without building
// the intermediate maps and raw copies encoding/json needs: for a 32 MiB
// upload those copies were twice the body. It calls datapoint for every
// dataPointID, then observation for each of its observations, in body
// order. It accepts only the form it reads
// unambiguously (no escapes, no repeated dataPointID, no keys other than
// exactly "time" and "value", finite numbers, RFC 3339 times) and
// otherwise reports false, possibly after some calls; the caller
// then discards what it got and decodes with encoding/json, which accepts
// everything accepted here with the same result and gives the precise
// reason for the rest.
func ScanUpload(body []byte, datapoint func(id string), observation func(TimeValue)) bool {
	s := jsonScanner{b: body}
	if !s.take('{') {
		return false
	}
	if s.take('}') {
		return s.atEnd()
	}
	seen := map[string]struct{}{}
	for {
		key, ok := s.plainString()
		if !ok || !s.take(':') || !s.take('[') {
			return false
		}
		dp := string(key)
		if _, dup := seen[dp]; dup {
			return false
		}
		seen[dp] = struct{}{}
		datapoint(dp)
		if !s.take(']') && !uploadPoints(&s, observation) {
			return false
		}
		if s.take('}') {
			return s.atEnd()
		}
		if !s.take(',') {
			return false
		}
	}
}

// uploadPoints reads the rest of a non-empty array of observation objects.
func uploadPoints(s *jsonScanner, observation func(TimeValue)) bool {
	for {
		if !s.take('{') {
			return false
		}
		tv, ok := observationFast(s)
		if !ok {
			return false
		}
		observation(tv)
		if s.take(']') {
			return true
		}
		if !s.take(',') {
			return false
		}
	}
}

// atEnd tells whether only whitespace is left.
func (s *jsonScanner) atEnd() bool {
	s.skipSpace()
	return s.i == len(s.b)
}
