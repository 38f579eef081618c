// Package edge is the building's edge device concern: the protocol the platform
// and a device speak over MQTT on edge/{project_id}/..., written down in
// docs/edge-protocol.md with one JSON schema per message in edge/schemas.
package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"

	"github.com/openbdp/bdp/fault"
)

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
	// MaxMessageBytes bounds every message; a larger one is refused unread.
	MaxMessageBytes = 256 << 10
	// MaxObservations bounds the observations of one data message.
	MaxObservations = 1000
	// MaxEvents bounds the events of one alive message.
	MaxEvents = 100
	// MaxApps bounds the apps of one alive message and of one device.
	MaxApps = 1000
	// MaxAppWrites bounds the datapoints one app writes.
	MaxAppWrites = 100
	// MaxAliveTimeout bounds an app's alive time-out, in seconds (one day).
	MaxAliveTimeout = 86400
	// MaxIDLength bounds dataPointIDs, app ids, algorithm names.
	MaxIDLength = 255
	// MaxTextLength bounds error texts and event messages.
	MaxTextLength = 1000
)

// PrioritySlots is the length of a priority array: BACnet priorities 1..16 at
// index 0..15 and the relinquish default at index 16.
const PrioritySlots = 17

// RelinquishDefault is the index of the relinquish default in a priority array.
const RelinquishDefault = 16

// Operations of a Request.
const (
	OpWrite     = "write"
	OpRead      = "read"
	OpAppStart  = "app_start"
	OpAppStop   = "app_stop"
	OpAppConfig = "app_config"
	OpPing      = "ping"
)

// Statuses of a Response.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// Kinds of an Event.
const (
	EventCrash     = "crash"     // the device lost its memory (reboot, crash)
	EventReload    = "reload"    // a running app was reloaded after a crash
	EventReset     = "reset"     // platform lost past the app's alive time-out: reset values written, app stopped
	EventRecovered = "recovered" // platform back: the app was restarted (auto-recovery)
)

// Request is one operation from the platform to the device.
type Request struct {
	Reference        string   `json:"reference"` // uuid, matches the response
	Operation        string   `json:"operation"` // write | read | app_start | app_stop | app_config | ping
	DataPointID      string   `json:"dataPointID,omitempty"`
	Value            *float64 `json:"value"`              // write: nil clears the slot
	Priority         int      `json:"priority,omitempty"` // write: 1..16
	KeepOutOfService bool     `json:"keep_out_of_service,omitempty"`
	App              *App     `json:"app,omitempty"` // app_*: app_stop needs only the id
}

// App is a controls app as the device keeps it: what it writes, what it
// writes back when it loses the platform, and after how long.
type App struct {
	ID           string          `json:"id"`
	Algorithm    string          `json:"algorithm,omitempty"`
	Writes       []AppWrite      `json:"writes,omitempty"`
	AliveTimeout int             `json:"alive_timeout,omitempty"` // seconds; 0: never reset
	Config       json.RawMessage `json:"config,omitempty"`
}

// AppWrite is one datapoint an app writes, at its priority, and the value the
// device writes there when the app is reset (nil relinquishes the slot).
type AppWrite struct {
	DataPointID string   `json:"dataPointID"`
	Priority    int      `json:"priority"`
	ResetValue  *float64 `json:"reset_value"`
}

// Response is the device's answer to one Request.
type Response struct {
	Reference        string     `json:"reference"`
	Status           string     `json:"status"` // ok | error
	Error            string     `json:"error,omitempty"`
	PriorityArray    []*float64 `json:"priority_array,omitempty"`    // 17 slots, BEFORE the write
	PresentValue     *float64   `json:"present_value,omitempty"`     // after the operation
	OverwrittenValue *float64   `json:"overwritten_value,omitempty"` // the slot's value before the write
}

// Alive is the device's heartbeat.
type Alive struct {
	Time   time.Time  `json:"time"`
	Apps   []AppState `json:"apps"`
	Events []Event    `json:"events,omitempty"`
}

// AppState says whether an app the device knows is running.
type AppState struct {
	ID      string `json:"id"`
	Running bool   `json:"running"`
}

// Event is one entry of the device's log, delivered with the next alive.
type Event struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"` // crash | reload | reset | recovered
	AppID   string    `json:"app_id,omitempty"`
	Message string    `json:"message,omitempty"`
}

// Observation is one present value on the data topic.
type Observation struct {
	DataPointID string    `json:"dataPointID"`
	Time        time.Time `json:"time"`
	Value       float64   `json:"value"`
}

// ErrMessage marks every decoding error, so callers can count garbage.
var ErrMessage = errors.New("edge: bad message")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMessage, fmt.Sprintf(format, args...))
}

var referencePattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func checkID(what, id string) error {
	if id == "" {
		return bad("%s missing", what)
	}
	if len(id) > MaxIDLength {
		return bad("%s longer than %d bytes", what, MaxIDLength)
	}
	return nil
}

func checkText(what, s string) error {
	if len(s) > MaxTextLength {
		return bad("%s longer than %d bytes", what, MaxTextLength)
	}
	return nil
}

func checkFinite(what string, v *float64) error {
	if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
		return bad("%s is not a finite number", what)
	}
	return nil
}

func checkReference(ref string) error {
	if !referencePattern.MatchString(ref) {
		return bad("reference %q is not a uuid", fault.Clip(ref))
	}
	return nil
}

func checkPriority(what string, p int) error {
	if p < 1 || p > 16 {
		return bad("%s %d outside 1..16", what, p)
	}
	return nil
}

// DecodeRequest decodes and checks a request (the device side).
func DecodeRequest(payload []byte) (Request, error) {
	var r Request
	if err := decodeStrict(payload, &r, refuseUnknown); err != nil {
		return Request{}, err
	}
	return r, r.Validate()
}

// Validate checks a request as DecodeRequest does; the platform calls it
// before publishing.
func (r Request) Validate() error {
	if err := checkReference(r.Reference); err != nil {
		return err
	}
	switch r.Operation {
	case OpWrite:
		if err := checkID("dataPointID", r.DataPointID); err != nil {
			return err
		}
		if err := checkPriority("priority", r.Priority); err != nil {
			return err
		}
		if err := checkFinite("value", r.Value); err != nil {
			return err
		}
	case OpRead:
		if err := checkID("dataPointID", r.DataPointID); err != nil {
			return err
		}
	case OpAppStart, OpAppConfig:
		if r.App == nil {
			return bad("%s without app", r.Operation)
		}
		if err := r.App.Validate(); err != nil {
			return err
		}
	case OpAppStop:
		if r.App == nil {
			return bad("app_stop without app")
		}
		if err := checkID("app.id", r.App.ID); err != nil {
			return err
		}
	case OpPing:
	case "":
		return bad("operation missing")
	default:
		return bad("unknown operation %q", fault.Clip(r.Operation))
	}
	return r.checkFieldsOfOperation()
}

// Validate checks an app definition.
func (a App) Validate() error {
	if err := checkID("app.id", a.ID); err != nil {
		return err
	}
	if len(a.Algorithm) > MaxIDLength {
		return bad("app.algorithm longer than %d bytes", MaxIDLength)
	}
	if a.AliveTimeout < 0 || a.AliveTimeout > MaxAliveTimeout {
		return bad("app.alive_timeout %d outside 0..%d", a.AliveTimeout, MaxAliveTimeout)
	}
	if len(a.Writes) > MaxAppWrites {
		return bad("app writes %d datapoints, more than %d", len(a.Writes), MaxAppWrites)
	}
	for i, w := range a.Writes {
		if err := checkID(fmt.Sprintf("app.writes[%d].dataPointID", i), w.DataPointID); err != nil {
			return err
		}
		if err := checkPriority(fmt.Sprintf("app.writes[%d].priority", i), w.Priority); err != nil {
			return err
		}
		if err := checkFinite(fmt.Sprintf("app.writes[%d].reset_value", i), w.ResetValue); err != nil {
			return err
		}
	}
	if len(a.Config) > 0 && !json.Valid(a.Config) {
		return bad("app.config is not JSON")
	}
	return nil
}

// DecodeResponse decodes and checks a device's response (the platform side).
func DecodeResponse(payload []byte) (Response, error) {
	var r Response
	if err := decodeStrict(payload, &r, ignoreUnknown); err != nil {
		return Response{}, err
	}
	return r, r.Validate()
}

// Validate checks a response as DecodeResponse does.
func (r Response) Validate() error {
	if err := checkReference(r.Reference); err != nil {
		return err
	}
	switch r.Status {
	case StatusOK:
	case StatusError:
		if r.Error == "" {
			return bad("status error without error text")
		}
	case "":
		return bad("status missing")
	default:
		return bad("unknown status %q", fault.Clip(r.Status))
	}
	if err := checkText("error", r.Error); err != nil {
		return err
	}
	if r.PriorityArray != nil && len(r.PriorityArray) != PrioritySlots {
		return bad("priority_array has %d slots, want %d", len(r.PriorityArray), PrioritySlots)
	}
	for i, v := range r.PriorityArray {
		if err := checkFinite(fmt.Sprintf("priority_array[%d]", i), v); err != nil {
			return err
		}
	}
	if err := checkFinite("present_value", r.PresentValue); err != nil {
		return err
	}
	return checkFinite("overwritten_value", r.OverwrittenValue)
}

// MayHoldEvents tells, without decoding, whether a heartbeat can carry
// events: their key is spelt exactly so (decoders refuse other casings)
// unless written with escapes. The event log, which only acts on events,
// skips the decode of every other heartbeat.
func MayHoldEvents(payload []byte) bool {
	return bytes.Contains(payload, []byte(`"events"`)) || bytes.IndexByte(payload, '\\') >= 0
}

// DecodeAlive decodes and checks a heartbeat (the platform side).
func DecodeAlive(payload []byte) (Alive, error) {
	var a Alive
	if err := decodeStrict(payload, &a, ignoreUnknown); err != nil {
		return Alive{}, err
	}
	return a, a.Validate()
}

// Validate checks a heartbeat as DecodeAlive does.
func (a Alive) Validate() error {
	if a.Time.IsZero() {
		return bad("alive without time")
	}
	if a.Apps == nil {
		return bad("alive without apps (an empty list when the device knows none)")
	}
	if len(a.Apps) > MaxApps {
		return bad("alive lists %d apps, more than %d", len(a.Apps), MaxApps)
	}
	for i, s := range a.Apps {
		if err := checkID(fmt.Sprintf("apps[%d].id", i), s.ID); err != nil {
			return err
		}
	}
	if len(a.Events) > MaxEvents {
		return bad("alive carries %d events, more than %d", len(a.Events), MaxEvents)
	}
	for i, e := range a.Events {
		if e.Time.IsZero() {
			return bad("events[%d] without time", i)
		}
		switch e.Kind {
		case EventCrash, EventReload, EventReset, EventRecovered:
		default:
			return bad("events[%d]: unknown kind %q", i, fault.Clip(e.Kind))
		}
		if e.Kind != EventCrash {
			if err := checkID(fmt.Sprintf("events[%d].app_id", i), e.AppID); err != nil {
				return err
			}
		} else if len(e.AppID) > MaxIDLength {
			return bad("events[%d].app_id longer than %d bytes", i, MaxIDLength)
		}
		if err := checkText(fmt.Sprintf("events[%d].message", i), e.Message); err != nil {
			return err
		}
	}
	return nil
}

// DecodeData decodes a data message: one observation or an array of them.
func DecodeData(payload []byte) ([]Observation, error) {
	trimmed := bytes.TrimSpace(payload)
	var obs []Observation
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := decodeStrict(payload, &obs, refuseUnknown); err != nil {
			return nil, err
		}
		if len(obs) == 0 {
			return nil, bad("empty observation array")
		}
		if len(obs) > MaxObservations {
			return nil, bad("%d observations, more than %d", len(obs), MaxObservations)
		}
	} else {
		var o Observation
		if err := decodeStrict(payload, &o, refuseUnknown); err != nil {
			return nil, err
		}
		obs = []Observation{o}
	}
	if err := checkValuesPresent(trimmed, len(obs)); err != nil {
		return nil, err
	}
	for i, o := range obs {
		if err := o.Validate(); err != nil {
			return nil, fmt.Errorf("observation %d: %w", i, err)
		}
	}
	return obs, nil
}

// Validate checks one observation.
func (o Observation) Validate() error {
	if err := checkID("dataPointID", o.DataPointID); err != nil {
		return err
	}
	if o.Time.IsZero() {
		return bad("observation without time")
	}
	v := o.Value
	return checkFinite("value", &v)
}

// checkValuesPresent refuses observations without a "value": decoding alone
// would read a missing value as 0, a plausible but false reading.
func checkValuesPresent(payload []byte, n int) error {
	var withValue []struct {
		Value json.RawMessage `json:"value"`
	}
	if payload[0] == '[' {
		if err := json.Unmarshal(payload, &withValue); err != nil {
			return bad("%s", fault.Clip(err.Error()))
		}
	} else {
		withValue = make([]struct {
			Value json.RawMessage `json:"value"`
		}, 1)
		if err := json.Unmarshal(payload, &withValue[0]); err != nil {
			return bad("%s", fault.Clip(err.Error()))
		}
	}
	for i := 0; i < n && i < len(withValue); i++ {
		if len(withValue[i].Value) == 0 || string(withValue[i].Value) == "null" {
			return bad("observation %d without a numeric value", i)
		}
	}
	return nil
}
