package codec

// decodeKafkaFast decodes the form gateways send, an observation object or
// an array of them with exactly the four fields, without reflection:
// encoding/json was the largest cost of Kafka ingestion, ahead of the
// database. It accepts only what it reads unambiguously (no escapes, no
// null, no other or repeated keys, valid observations) and otherwise
// reports false, leaving dst as it was; DecodeKafka then decodes with
// encoding/json, which gives the same result for everything accepted here
// (FuzzKafkaFastDecode) and the precise reason for everything else.
func decodeKafkaFast(value []byte, dst []KafkaObservation) ([]KafkaObservation, bool) {
	s := kafkaScanner{jsonScanner: jsonScanner{b: value}}
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

// kafkaScanner reads gateway messages.
type kafkaScanner struct {
	jsonScanner
	last string // the previous dataPointID, reused when it repeats
}

// observations reads the rest of an array of observation objects.
func (s *kafkaScanner) observations(dst []KafkaObservation) ([]KafkaObservation, bool) {
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
func (s *kafkaScanner) observation(dst []KafkaObservation) ([]KafkaObservation, bool) {
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
			var v float64
			v, ok = s.finiteNumber()
			ok = ok && !o.Value.set
			o.Value = kafkaJSONNumber{v: v, set: true}
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

func (s *kafkaScanner) dataPointID(dst *kafkaJSONString) bool {
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
func (s *kafkaScanner) positiveInt(dst *kafkaJSONInt) bool {
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
