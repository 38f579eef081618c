// Package pipeline carries observations from every source (HTTP uploads,
// CSV imports, Kafka, later MQTT and virtual datapoints) to storage and on
// to the subscribers that asked for them: decode → validate → batch →
// store → route.
package pipeline

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Observation is one value of one datapoint at one time.
type Observation struct {
	ProjectID   int64
	DataPointID string
	Time        time.Time
	Value       float64
}

// Source names where observations came from, for metrics and logs.
type Source string

// The sources.
const (
	SourceHTTP  Source = "http"
	SourceCSV   Source = "csv"
	SourceKafka Source = "kafka"
)

// Sink stores observations. Write returns nil only once every observation
// is committed, so a caller may acknowledge them then (an HTTP answer, a
// Kafka offset). The slice belongs to the sink from the call on (it is
// routed to subscribers after the answer): callers must not reuse it.
// Implementations are safe for concurrent use.
type Sink interface {
	Write(ctx context.Context, src Source, obs []Observation) error
}

// Validate checks one observation: a finite value, a sane time and an
// acceptable dataPointID (decisions.md 4: any characters but control
// characters and backslash).
func (o Observation) Validate() error {
	if math.IsNaN(o.Value) || math.IsInf(o.Value, 0) {
		return fmt.Errorf("value %v is not a finite number", o.Value)
	}
	if o.Time.IsZero() || o.Time.Year() < 1900 || o.Time.Year() > 9999 {
		return fmt.Errorf("time %s is outside the years 1900 to 9999", o.Time.Format(time.RFC3339))
	}
	return ValidateDataPointID(o.DataPointID)
}

// ParseRFC3339 parses an RFC 3339 time as uploads and gateways send it.
// RFC 3339 lets the T and Z be lowercase (section 5.6), which Go's layout
// does not; no other letter is valid, so upper-casing the whole is safe.
func ParseRFC3339(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil && strings.ContainsAny(s, "tz") {
		t, err = time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	}
	return t, err
}

// ValidateDataPointID enforces decisions.md 4: 1 to 512 bytes of valid
// UTF-8 without backslash and without any control character (Unicode
// category Cc: C0, DEL and C1, tab and line feed included), so that none
// reaches PostgreSQL (which refuses NUL and invalid UTF-8) or an MQTT
// topic.
func ValidateDataPointID(id string) error {
	if id == "" || len(id) > 512 {
		return fmt.Errorf("dataPointID must have 1 to 512 bytes")
	}
	for i := 0; i < len(id); {
		r, n := utf8.DecodeRuneInString(id[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return fmt.Errorf("dataPointID %q is not valid UTF-8", id)
		case unicode.IsControl(r):
			return fmt.Errorf("dataPointID %q holds the control character %U; control characters and backslash are not allowed", id, r)
		case r == '\\':
			return fmt.Errorf("dataPointID %q: control characters and backslash are not allowed", id)
		}
		i += n
	}
	return nil
}
