package codec

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/openbdp/bdp/fault"
)

// Influx line protocol is the other payload a publish for ingestion may
// carry, because aedifion's gateways and MQTT tutorial send it:
//
//	<dataPointID>[,<tag>=<value>...] value=<number> [<unix nanoseconds>]
//
// one observation a line, as many lines as MaxObservationsPerMessage. The
// measurement names the datapoint and must be the one of the topic the
// message is published to, so that the broker's topic ACLs and the
// TagAuth check of that topic decide about every line (a message cannot
// carry observations of datapoints its topic does not name). Tags are
// accepted and not stored: bdp keeps one number per time. The only field
// is value, a float (1.5, -2e3) or an integer (7i, 7u); a line without a
// timestamp is taken at now, as InfluxDB does. Empty lines and # comments
// are skipped.

// DecodePayload reads the payload of a publish on dataPointID's topic:
// JSON observations (DecodeObservations) when it starts with { or [,
// otherwise Influx line protocol. An error says what is wrong, on which
// line, without echoing the payload.
func DecodePayload(payload []byte, dataPointID string, now time.Time) ([]TimeValue, error) {
	trimmed := bytes.TrimLeft(payload, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return DecodeObservations(payload)
	}
	out, err := DecodeLineProtocol(payload, dataPointID, now)
	if err != nil {
		return nil, fmt.Errorf("payload is neither JSON observations nor Influx line protocol (%s value=<number> [<ns>]): %w",
			`<dataPointID>`, err)
	}
	return out, nil
}

// DecodeLineProtocol reads Influx line protocol whose every line's
// measurement is dataPointID (see above).
func DecodeLineProtocol(payload []byte, dataPointID string, now time.Time) ([]TimeValue, error) {
	var out []TimeValue
	rest := payload
	for n := 1; len(rest) > 0; n++ {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		line = bytes.TrimRight(bytes.TrimLeft(line, " \t"), " \t\r")
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if len(out) == MaxObservationsPerMessage {
			return nil, fmt.Errorf("more than %d lines; at most %d observations per message", MaxObservationsPerMessage, MaxObservationsPerMessage)
		}
		tv, err := parseLine(line, dataPointID, now)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, tv)
	}
	if len(out) == 0 {
		return nil, errors.New("payload is empty")
	}
	return out, nil
}

// parseLine reads one line that is not empty and not a comment.
func parseLine(line []byte, dataPointID string, now time.Time) (TimeValue, error) {
	measurement, i := lineToken(line, 0, ", ")
	if measurement != dataPointID {
		if measurement == "" {
			return TimeValue{}, errors.New("no measurement; it names the datapoint")
		}
		return TimeValue{}, errors.New("the measurement is not the dataPointID of the topic")
	}
	// Tags: key=value pairs, read for their escapes and not kept.
	for i < len(line) && line[i] == ',' {
		var tag string
		tag, i = lineToken(line, i+1, ", ")
		if k, _, ok := strings.Cut(tag, "="); !ok || k == "" {
			return TimeValue{}, errors.New("a tag must be key=value")
		}
	}
	if i >= len(line) {
		return TimeValue{}, errors.New("no field; write value=<number>")
	}
	i++ // the space before the fields
	tv := TimeValue{Time: now}
	hasValue := false
	for {
		var key string
		key, i = lineToken(line, i, "=, ")
		if i >= len(line) || line[i] != '=' {
			return TimeValue{}, errors.New("a field must be key=value")
		}
		if key != "value" {
			return TimeValue{}, fmt.Errorf("field %q: the only field is value", fault.Clip(key))
		}
		if hasValue {
			return TimeValue{}, errors.New("field value is given twice")
		}
		end := i + 1
		for end < len(line) && line[end] != ',' && line[end] != ' ' {
			end++
		}
		v, err := lineNumber(line[i+1 : end])
		if err != nil {
			return TimeValue{}, err
		}
		tv.Value, hasValue, i = v, true, end
		if i >= len(line) || line[i] == ' ' {
			break
		}
		i++ // the comma before the next field
	}
	if i < len(line) {
		ts := bytes.TrimLeft(line[i:], " ")
		ns, err := strconv.ParseInt(string(ts), 10, 64)
		if err != nil {
			return TimeValue{}, errors.New("the timestamp must be whole nanoseconds since 1970 (UTC)")
		}
		tv.Time = time.Unix(0, ns).UTC()
	}
	return tv, nil
}

// lineToken reads from line[i] up to the first unescaped byte of stops,
// and returns it unescaped (a backslash before a stop byte or a backslash
// stands for that byte; elsewhere it is a literal backslash) with the
// index of the stop byte (len(line) when none).
func lineToken(line []byte, i int, stops string) (string, int) {
	var b []byte
	for ; i < len(line); i++ {
		c := line[i]
		if c == '\\' && i+1 < len(line) && (line[i+1] == '\\' || strings.IndexByte(stops, line[i+1]) >= 0) {
			i++
			b = append(b, line[i])
			continue
		}
		if strings.IndexByte(stops, c) >= 0 {
			break
		}
		b = append(b, c)
	}
	return string(b), i
}

// lineNumber reads a field value: a float, or an integer with i or u.
// Booleans and strings are refused: a datapoint holds numbers.
func lineNumber(b []byte) (float64, error) {
	if len(b) == 0 {
		return 0, errors.New("field value is empty")
	}
	c := b[0]
	if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.') {
		return 0, errors.New("field value must be a number (1.5, 7i or 7u)")
	}
	switch b[len(b)-1] {
	case 'i':
		n, err := strconv.ParseInt(string(b[:len(b)-1]), 10, 64)
		if err != nil {
			return 0, errors.New("field value is not an integer")
		}
		return float64(n), nil
	case 'u':
		n, err := strconv.ParseUint(string(b[:len(b)-1]), 10, 64)
		if err != nil {
			return 0, errors.New("field value is not an unsigned integer")
		}
		return float64(n), nil
	}
	for _, c := range b {
		// ParseFloat reads inf, nan and hex floats, which line protocol
		// does not have.
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return 0, errors.New("field value must be a number (1.5, 7i or 7u)")
		}
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, errors.New("field value is not a number a 64-bit float holds")
	}
	return v, nil
}
