package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/openbdp/bdp/fault"
)

// MQTT topics and payloads of live data (decisions.md 6):
//
//	topic    project/{project_id}/datapoint/{dataPointID}
//	payload  {"time": RFC 3339, "value": number}, or an array of such objects
//
// In a topic a dataPointID is written as it is, except for the five bytes
// MQTT gives a meaning (or that would end the string): % / + # and NUL are
// percent-encoded. A publish for ingestion is decoded the same way.

// MaxObservationsPerMessage bounds one MQTT payload, so that a single
// publish cannot hold a decoder's memory for long.
const MaxObservationsPerMessage = 10000

// topicEscapes maps each byte that must be encoded in a topic to its escape.
var topicEscapes = [256]string{'%': "%25", '/': "%2F", '+': "%2B", '#': "%23", 0: "%00"}

// EscapeTopicID writes a dataPointID as a single topic level.
func EscapeTopicID(id string) string {
	n := 0
	for i := 0; i < len(id); i++ {
		if topicEscapes[id[i]] != "" {
			n++
		}
	}
	if n == 0 {
		return id
	}
	var b strings.Builder
	b.Grow(len(id) + 2*n)
	for i := 0; i < len(id); i++ {
		if e := topicEscapes[id[i]]; e != "" {
			b.WriteString(e)
		} else {
			b.WriteByte(id[i])
		}
	}
	return b.String()
}

// UnescapeTopicID reverses EscapeTopicID. A % that does not start one of
// the five escapes (hex digits in either case) is an error rather than a
// literal, so that every dataPointID has exactly one topic and ACLs that
// compare topics cannot be bypassed by spelling one differently.
func UnescapeTopicID(level string) (string, error) {
	if !strings.ContainsAny(level, "%/+#\x00") {
		return level, nil
	}
	var b strings.Builder
	b.Grow(len(level))
	for i := 0; i < len(level); i++ {
		c := level[i]
		switch c {
		case '/', '+', '#', 0:
			return "", fmt.Errorf("a dataPointID in a topic must percent-encode %q", c)
		case '%':
			if i+2 >= len(level) {
				return "", errors.New("a % in a topic's dataPointID must start %25, %2F, %2B, %23 or %00")
			}
			v, err := strconv.ParseUint(level[i+1:i+3], 16, 8)
			if err != nil || topicEscapes[byte(v)] == "" {
				return "", errors.New("a % in a topic's dataPointID must start %25, %2F, %2B, %23 or %00")
			}
			b.WriteByte(byte(v))
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// ProjectTopicPrefix is the start of every topic of a project's live data.
func ProjectTopicPrefix(projectID int64) string {
	return "project/" + strconv.FormatInt(projectID, 10) + "/"
}

// DatapointTopic is the topic of one datapoint's live data.
func DatapointTopic(projectID int64, dataPointID string) string {
	return ProjectTopicPrefix(projectID) + "datapoint/" + EscapeTopicID(dataPointID)
}

// ParseDatapointTopic reads a topic written by DatapointTopic. The project
// id must be written canonically (no sign, no leading zero), again so that
// one datapoint has one topic.
func ParseDatapointTopic(topic string) (projectID int64, dataPointID string, err error) {
	rest, ok := strings.CutPrefix(topic, "project/")
	if !ok {
		return 0, "", errors.New("topic does not start with project/")
	}
	pid, level, ok := strings.Cut(rest, "/datapoint/")
	if !ok {
		return 0, "", errors.New("topic is not project/{project_id}/datapoint/{dataPointID}")
	}
	projectID, err = strconv.ParseInt(pid, 10, 64)
	if err != nil || projectID <= 0 || strconv.FormatInt(projectID, 10) != pid {
		return 0, "", fmt.Errorf("topic's project id %q is not a positive integer", fault.Clip(pid))
	}
	if level == "" {
		return 0, "", errors.New("topic names no dataPointID")
	}
	dataPointID, err = UnescapeTopicID(level)
	if err != nil {
		return 0, "", err
	}
	return projectID, dataPointID, nil
}

// TimeValue is one observation of an MQTT payload; the topic says whose.
type TimeValue struct {
	Time  time.Time
	Value float64
}

// AppendObservationJSON appends the live-data payload of one observation:
// the time in UTC, RFC 3339 with as many fractional digits as it needs.
func AppendObservationJSON(dst []byte, t time.Time, v float64) []byte {
	dst = append(dst, `{"time":"`...)
	dst = t.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","value":`...)
	dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
	return append(dst, '}')
}

// mqttObservation is the wire form of one observation. A map, not a
// struct: encoding/json matches struct fields ignoring case, and a payload
// with "Value" must be refused, not half understood.
type mqttObservation map[string]json.RawMessage

// DecodeObservations reads an MQTT payload: one observation object or an
// array of them, each with exactly "time" (RFC 3339) and "value" (a JSON
// number). An error says what is wrong with which element, without echoing
// the payload.
func DecodeObservations(payload []byte) ([]TimeValue, error) {
	if out, ok := decodeObservationsFast(payload); ok {
		return out, nil
	}
	return decodeObservationsJSON(payload)
}

// decodeObservationsJSON is DecodeObservations through encoding/json.
func decodeObservationsJSON(payload []byte) ([]TimeValue, error) {
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 {
		return nil, errors.New("payload is empty; send {\"time\": RFC 3339, \"value\": number} or an array of them")
	}
	var items []mqttObservation
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	switch trimmed[0] {
	case '{':
		var one mqttObservation
		if err := dec.Decode(&one); err != nil {
			return nil, fmt.Errorf("payload is not an observation object: %s", JSONProblem("", err))
		}
		items = []mqttObservation{one}
	case '[':
		if err := dec.Decode(&items); err != nil {
			return nil, fmt.Errorf("payload is not an array of observation objects: %s", JSONProblem("", err))
		}
		if len(items) == 0 {
			return nil, errors.New("payload is an empty array")
		}
		if len(items) > MaxObservationsPerMessage {
			return nil, fmt.Errorf("payload holds %d observations; at most %d per message", len(items), MaxObservationsPerMessage)
		}
	default:
		return nil, errors.New("payload must be a JSON object or array")
	}
	if dec.InputOffset() != int64(len(trimmed)) {
		return nil, errors.New("payload has data after its JSON value")
	}
	out := make([]TimeValue, len(items))
	for i, it := range items {
		tv, err := it.decode()
		if err != nil {
			if len(items) > 1 {
				return nil, fmt.Errorf("observation %d: %w", i, err)
			}
			return nil, err
		}
		out[i] = tv
	}
	return out, nil
}

func (o mqttObservation) decode() (TimeValue, error) {
	rawTime, hasTime := o["time"]
	rawValue, hasValue := o["value"]
	if !hasTime || !hasValue {
		return TimeValue{}, errors.New(`an observation needs "time" and "value"`)
	}
	if len(o) > 2 {
		for k := range o {
			if k != "time" && k != "value" {
				return TimeValue{}, fmt.Errorf(`unknown field %q; only "time" and "value" are allowed`, fault.Clip(k))
			}
		}
	}
	var ts string
	if err := json.Unmarshal(rawTime, &ts); err != nil {
		return TimeValue{}, errors.New("time must be an RFC 3339 string")
	}
	t, err := ParseRFC3339(ts)
	if err != nil {
		return TimeValue{}, fmt.Errorf("time %q is not RFC 3339", fault.Clip(ts))
	}
	if len(rawValue) == 0 || !(rawValue[0] == '-' || rawValue[0] >= '0' && rawValue[0] <= '9') {
		return TimeValue{}, errors.New("value must be a JSON number")
	}
	v, err := strconv.ParseFloat(string(rawValue), 64)
	if err != nil {
		return TimeValue{}, errors.New("value is out of the range of a 64-bit float")
	}
	return TimeValue{Time: t, Value: v}, nil
}
