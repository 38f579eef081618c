package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// The Kafka gateway JSON: one message value is an observation object
// {"project_id", "dataPointID", "time" (RFC 3339), "value"} or an array
// of them. Unknown fields are ignored; a missing or null field is
// malformed.

// KafkaObservation is one observation of a gateway message, which names
// its project.
type KafkaObservation struct {
	ProjectID   int64
	DataPointID string
	Time        time.Time
	Value       float64
}

// Refusal says why a message was refused; it is a metrics label.
type Refusal string

// The refusals.
const (
	Malformed Refusal = "malformed" // not JSON, or not the shape of an observation
	Invalid   Refusal = "invalid"   // well-formed, but Validate refuses a value (or project_id is not positive)
)

// DecodeKafka appends the observations of one message value to dst. On
// error it returns the refusal (Malformed or Invalid) and dst may hold
// part of the message's observations.
func DecodeKafka(value []byte, dst []KafkaObservation) ([]KafkaObservation, Refusal, error) {
	if out, ok := decodeKafkaFast(value, dst); ok {
		return out, "", nil
	}
	return decodeKafkaJSON(value, dst)
}

// decodeKafkaJSON is DecodeKafka through encoding/json.
func decodeKafkaJSON(value []byte, dst []KafkaObservation) ([]KafkaObservation, Refusal, error) {
	v := bytes.TrimLeft(value, " \t\r\n")
	if len(v) == 0 {
		return dst, Malformed, errors.New("empty message")
	}
	switch v[0] {
	case '{':
		var o kafkaJSONObservation
		if err := json.Unmarshal(v, &o); err != nil {
			return dst, Malformed, kafkaJSONError(err)
		}
		obs, kind, err := o.observation()
		if err != nil {
			return dst, kind, err
		}
		return append(dst, obs), "", nil
	case '[':
		var os []kafkaJSONObservation
		if err := json.Unmarshal(v, &os); err != nil {
			return dst, Malformed, kafkaJSONError(err)
		}
		for i := range os {
			obs, kind, err := os[i].observation()
			if err != nil {
				return dst, kind, fmt.Errorf("element %d: %w", i, err)
			}
			dst = append(dst, obs)
		}
		return dst, "", nil
	default:
		return dst, Malformed, errors.New("not a JSON object or array")
	}
}

func kafkaJSONError(err error) error { return errors.New(JSONProblem("", err)) }

// kafkaJSONObservation is the JSON form of an observation; each field
// remembers whether it was present.
type kafkaJSONObservation struct {
	ProjectID   kafkaJSONInt    `json:"project_id"`
	DataPointID kafkaJSONString `json:"dataPointID"`
	Time        kafkaJSONString `json:"time"`
	Value       kafkaJSONNumber `json:"value"`
}

func (j *kafkaJSONObservation) observation() (KafkaObservation, Refusal, error) {
	switch {
	case !j.ProjectID.set:
		return KafkaObservation{}, Malformed, errors.New("project_id is missing")
	case !j.DataPointID.set:
		return KafkaObservation{}, Malformed, errors.New("dataPointID is missing")
	case !j.Time.set:
		return KafkaObservation{}, Malformed, errors.New("time is missing")
	case !j.Value.set:
		return KafkaObservation{}, Malformed, errors.New("value is missing")
	}
	if j.ProjectID.v <= 0 {
		return KafkaObservation{}, Invalid, fmt.Errorf("project_id %d is not positive", j.ProjectID.v)
	}
	t, err := ParseRFC3339(j.Time.v)
	if err != nil {
		return KafkaObservation{}, Invalid, fmt.Errorf("time %q is not RFC 3339", j.Time.v)
	}
	o := KafkaObservation{ProjectID: j.ProjectID.v, DataPointID: j.DataPointID.v, Time: t.UTC(), Value: j.Value.v}
	if err := Validate(o.DataPointID, o.Time, o.Value); err != nil {
		return KafkaObservation{}, Invalid, err
	}
	return o, "", nil
}

type kafkaJSONInt struct {
	v   int64
	set bool
}

func (n *kafkaJSONInt) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("project_id: want an integer, got %s", kafkaSnippet(b))
	}
	n.v, n.set = v, true
	return nil
}

type kafkaJSONNumber struct {
	v   float64
	set bool
}

func (n *kafkaJSONNumber) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) == 0 || (b[0] != '-' && (b[0] < '0' || b[0] > '9')) {
		return fmt.Errorf("value: want a number, got %s", kafkaSnippet(b))
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(v, 0) {
		return fmt.Errorf("value %s is not a finite 64-bit number", kafkaSnippet(b))
	}
	n.v, n.set = v, true
	return nil
}

type kafkaJSONString struct {
	v   string
	set bool
}

func (s *kafkaJSONString) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '"' {
		return fmt.Errorf("want a string, got %s", kafkaSnippet(b))
	}
	if bytes.IndexByte(b, '\\') < 0 {
		s.v, s.set = string(b[1:len(b)-1]), true
		return nil
	}
	if err := json.Unmarshal(b, &s.v); err != nil {
		return err
	}
	s.set = true
	return nil
}

func kafkaSnippet(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
