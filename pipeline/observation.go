// Package pipeline carries observations from every source (HTTP uploads,
// CSV imports, Kafka, MQTT and virtual datapoints) to storage and on
// to the subscribers that asked for them: decode → validate → batch →
// store → route.
package pipeline

import (
	"context"
	"time"

	"github.com/openbdp/bdp/codec"
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
	SourceMQTT  Source = "mqtt" // MQTT ingestion (publishers on the broker)
	SourceVDP   Source = "vdp"  // virtual datapoint outputs
	SourceEdge  Source = "edge" // present values from a building's edge device
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
	return codec.Validate(o.DataPointID, o.Time, o.Value)
}
