// Package edge is the building's edge device concern: the protocol the platform
// and a device speak over MQTT on edge/{project_id}/..., written down in
// docs/edge-protocol.md with one JSON schema per message in edge/schemas.
// The messages and their decoders are wire formats, in package codec
// (codec/edge.go); edge names them as its own below and keeps the topics,
// the timing, the connections, the setpoints and the apps.
package edge

import (
	"embed"
	"strconv"
	"time"

	"github.com/openbdp/bdp/codec"
)

// Schemas holds the JSON schema of every message, the protocol's
// description for device makers (docs/edge-protocol.md): request.json,
// response.json, alive.json, data.json. Tests hold the decoders to them
// (edgetest.Schemas).
//
//go:embed schemas/*.json
var Schemas embed.FS

// Topics. A device's MQTT user edge-{project_id} has rights on edge/{project_id}/#.

// RequestTopic carries operations from the platform to the device.
func RequestTopic(projectID int64) string { return topic(projectID, "request") }

// ResponseTopic carries the device's answers, matched to requests by reference.
func ResponseTopic(projectID int64) string { return topic(projectID, "response") }

// AliveTopic carries the device's heartbeat, every AliveInterval.
func AliveTopic(projectID int64) string { return topic(projectID, "alive") }

// DataTopic carries observations (present values) from the building.
func DataTopic(projectID int64) string { return topic(projectID, "data") }

func topic(projectID int64, name string) string {
	return "edge/" + strconv.FormatInt(projectID, 10) + "/" + name
}

// Protocol constants (docs/edge-protocol.md explains each).
const (
	// QoS of every message on the four topics; no message is retained.
	QoS byte = 1
	// AliveInterval is how often the device publishes on alive.
	AliveInterval = 5 * time.Second
	// MissedAlivesOffline: the platform counts the device offline after this
	// many missed heartbeats (15 s without an alive).
	MissedAlivesOffline = 3
	// OperationTimeout: the platform fails an unanswered acked operation.
	OperationTimeout = 30 * time.Second
	// PingInterval is how often the platform sends a ping request, so that a
	// device can tell the platform is there (apps' alive time-outs count from
	// the last request of any kind).
	PingInterval = 5 * time.Second
)

// The messages, their limits and their values are codec's (codec/edge.go
// documents each); these are their names in the edge domain.

// Limits of a message.
const (
	MaxMessageBytes = codec.EdgeMaxMessageBytes
	MaxObservations = codec.EdgeMaxObservations
	MaxEvents       = codec.EdgeMaxEvents
	MaxApps         = codec.EdgeMaxApps
	MaxAppWrites    = codec.EdgeMaxAppWrites
	MaxAliveTimeout = codec.EdgeMaxAliveTimeout
	MaxIDLength     = codec.EdgeMaxIDLength
	MaxTextLength   = codec.EdgeMaxTextLength
)

// PrioritySlots and RelinquishDefault lay out a priority array.
const (
	PrioritySlots     = codec.EdgePrioritySlots
	RelinquishDefault = codec.EdgeRelinquishDefault
)

// Operations of a Request.
const (
	OpWrite     = codec.EdgeOpWrite
	OpRead      = codec.EdgeOpRead
	OpAppStart  = codec.EdgeOpAppStart
	OpAppStop   = codec.EdgeOpAppStop
	OpAppConfig = codec.EdgeOpAppConfig
	OpPing      = codec.EdgeOpPing
)

// Statuses of a Response.
const (
	StatusOK    = codec.EdgeStatusOK
	StatusError = codec.EdgeStatusError
)

// Kinds of an Event.
const (
	EventCrash     = codec.EdgeEventCrash
	EventReload    = codec.EdgeEventReload
	EventReset     = codec.EdgeEventReset
	EventRecovered = codec.EdgeEventRecovered
)

// The messages.
type (
	Request     = codec.EdgeRequest
	App         = codec.EdgeApp
	AppWrite    = codec.EdgeAppWrite
	Response    = codec.EdgeResponse
	Alive       = codec.EdgeAlive
	AppState    = codec.EdgeAppState
	Event       = codec.EdgeEvent
	Observation = codec.EdgeObservation
)

// DecodeRequest decodes and checks a request (the device side).
func DecodeRequest(payload []byte) (Request, error) { return codec.DecodeEdgeRequest(payload) }

// DecodeResponse decodes and checks a device's response.
func DecodeResponse(payload []byte) (Response, error) { return codec.DecodeEdgeResponse(payload) }

// DecodeAlive decodes and checks a heartbeat.
func DecodeAlive(payload []byte) (Alive, error) { return codec.DecodeEdgeAlive(payload) }

// DecodeData decodes a data message: one observation or an array of them.
func DecodeData(payload []byte) ([]Observation, error) { return codec.DecodeEdgeData(payload) }

// MayHoldEvents tells, without decoding, whether a heartbeat can carry
// events (codec.EdgeMayHoldEvents).
func MayHoldEvents(payload []byte) bool { return codec.EdgeMayHoldEvents(payload) }
