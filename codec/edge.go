package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"time"

	"github.com/openbdp/bdp/fault"
)

// The edge protocol's messages, which bdp and a building's edge device
// exchange on edge/{project_id}/... (docs/edge-protocol.md, one JSON
// schema per message in edge/schemas): the messages, their limits and the
// checks a message must pass. Package edge speaks the protocol; its
// decoders are in edgedecode.go.

// Limits of the edge protocol's messages.
const (
	// EdgeMaxMessageBytes bounds every message; a larger one is refused unread.
	EdgeMaxMessageBytes = 256 << 10
	// EdgeMaxObservations bounds the observations of one data message.
	EdgeMaxObservations = 1000
	// EdgeMaxEvents bounds the events of one alive message.
	EdgeMaxEvents = 100
	// EdgeMaxApps bounds the apps of one alive message and of one device.
	EdgeMaxApps = 1000
	// EdgeMaxAppWrites bounds the datapoints one app writes.
	EdgeMaxAppWrites = 100
	// EdgeMaxAliveTimeout bounds an app's alive time-out, in seconds (one day).
	EdgeMaxAliveTimeout = 86400
	// EdgeMaxIDLength bounds dataPointIDs, app ids, algorithm names.
	EdgeMaxIDLength = 255
	// EdgeMaxTextLength bounds error texts and event messages.
	EdgeMaxTextLength = 1000
)

// EdgePrioritySlots is the length of a priority array: BACnet priorities
// 1..16 at index 0..15 and the relinquish default at index 16.
const EdgePrioritySlots = 17

// EdgeRelinquishDefault is the index of the relinquish default in a
// priority array.
const EdgeRelinquishDefault = 16

// Operations of an EdgeRequest.
const (
	EdgeOpWrite     = "write"
	EdgeOpRead      = "read"
	EdgeOpAppStart  = "app_start"
	EdgeOpAppStop   = "app_stop"
	EdgeOpAppConfig = "app_config"
	EdgeOpPing      = "ping"
)

// Statuses of an EdgeResponse.
const (
	EdgeStatusOK    = "ok"
	EdgeStatusError = "error"
)

// Kinds of an EdgeEvent.
const (
	EdgeEventCrash     = "crash"     // the device lost its memory (reboot, crash)
	EdgeEventReload    = "reload"    // a running app was reloaded after a crash
	EdgeEventReset     = "reset"     // platform lost past the app's alive time-out: reset values written, app stopped
	EdgeEventRecovered = "recovered" // platform back: the app was restarted (auto-recovery)
)

// EdgeRequest is one operation from the platform to the device.
type EdgeRequest struct {
	Reference        string   `json:"reference"` // uuid, matches the response
	Operation        string   `json:"operation"` // write | read | app_start | app_stop | app_config | ping
	DataPointID      string   `json:"dataPointID,omitempty"`
	Value            *float64 `json:"value"`              // write: nil clears the slot
	Priority         int      `json:"priority,omitempty"` // write: 1..16
	KeepOutOfService bool     `json:"keep_out_of_service,omitempty"`
	App              *EdgeApp `json:"app,omitempty"` // app_*: app_stop needs only the id
}

// EdgeApp is a controls app as the device keeps it: what it writes, what
// it writes back when it loses the platform, and after how long.
type EdgeApp struct {
	ID           string          `json:"id"`
	Algorithm    string          `json:"algorithm,omitempty"`
	Writes       []EdgeAppWrite  `json:"writes,omitempty"`
	AliveTimeout int             `json:"alive_timeout,omitempty"` // seconds; 0: never reset
	Config       json.RawMessage `json:"config,omitempty"`
}

// EdgeAppWrite is one datapoint an app writes, at its priority, and the
// value the device writes there when the app is reset (nil relinquishes
// the slot).
type EdgeAppWrite struct {
	DataPointID string   `json:"dataPointID"`
	Priority    int      `json:"priority"`
	ResetValue  *float64 `json:"reset_value"`
}

// EdgeResponse is the device's answer to one EdgeRequest.
type EdgeResponse struct {
	Reference        string     `json:"reference"`
	Status           string     `json:"status"` // ok | error
	Error            string     `json:"error,omitempty"`
	PriorityArray    []*float64 `json:"priority_array,omitempty"`    // 17 slots, BEFORE the write
	PresentValue     *float64   `json:"present_value,omitempty"`     // after the operation
	OverwrittenValue *float64   `json:"overwritten_value,omitempty"` // the slot's value before the write
}

// EdgeAlive is the device's heartbeat.
type EdgeAlive struct {
	Time   time.Time      `json:"time"`
	Apps   []EdgeAppState `json:"apps"`
	Events []EdgeEvent    `json:"events,omitempty"`
}

// EdgeAppState says whether an app the device knows is running.
type EdgeAppState struct {
	ID      string `json:"id"`
	Running bool   `json:"running"`
}

// EdgeEvent is one entry of the device's log, delivered with the next
// alive.
type EdgeEvent struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"` // crash | reload | reset | recovered
	AppID   string    `json:"app_id,omitempty"`
	Message string    `json:"message,omitempty"`
}

// EdgeObservation is one present value on the data topic.
type EdgeObservation struct {
	DataPointID string    `json:"dataPointID"`
	Time        time.Time `json:"time"`
	Value       float64   `json:"value"`
}

// ErrEdgeMessage marks every edge message error, so callers can count
// garbage.
var ErrEdgeMessage = errors.New("edge: bad message")

func badEdge(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrEdgeMessage, fmt.Sprintf(format, args...))
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// IsUUID reports whether s is a uuid as text (8-4-4-4-12 hex digits, any
// case): a request's reference, a platform app's id.
func IsUUID(s string) bool { return uuidPattern.MatchString(s) }

func checkEdgeID(what, id string) error {
	if id == "" {
		return badEdge("%s missing", what)
	}
	if len(id) > EdgeMaxIDLength {
		return badEdge("%s longer than %d bytes", what, EdgeMaxIDLength)
	}
	return nil
}

func checkEdgeText(what, s string) error {
	if len(s) > EdgeMaxTextLength {
		return badEdge("%s longer than %d bytes", what, EdgeMaxTextLength)
	}
	return nil
}

func checkEdgeFinite(what string, v *float64) error {
	if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
		return badEdge("%s is not a finite number", what)
	}
	return nil
}

func checkEdgeReference(ref string) error {
	if !IsUUID(ref) {
		return badEdge("reference %q is not a uuid", fault.Clip(ref))
	}
	return nil
}

func checkEdgePriority(what string, p int) error {
	if p < 1 || p > 16 {
		return badEdge("%s %d outside 1..16", what, p)
	}
	return nil
}

// edgeOperationFields are the fields each operation takes, nil for an
// unknown one. value is listed for all, as null outside write (the
// encoding of a Request without value), and must be null there.
func edgeOperationFields(op string) []string {
	switch op {
	case EdgeOpWrite:
		return []string{"reference", "operation", "value", "dataPointID", "priority", "keep_out_of_service"}
	case EdgeOpRead:
		return []string{"reference", "operation", "value", "dataPointID"}
	case EdgeOpAppStart, EdgeOpAppConfig, EdgeOpAppStop:
		return []string{"reference", "operation", "value", "app"}
	case EdgeOpPing:
		return []string{"reference", "operation", "value"}
	}
	return nil
}

// Validate checks a request as DecodeEdgeRequest does; the platform calls
// it before publishing.
func (r EdgeRequest) Validate() error {
	if err := checkEdgeReference(r.Reference); err != nil {
		return err
	}
	switch r.Operation {
	case EdgeOpWrite:
		if err := checkEdgeID("dataPointID", r.DataPointID); err != nil {
			return err
		}
		if err := checkEdgePriority("priority", r.Priority); err != nil {
			return err
		}
		if err := checkEdgeFinite("value", r.Value); err != nil {
			return err
		}
	case EdgeOpRead:
		if err := checkEdgeID("dataPointID", r.DataPointID); err != nil {
			return err
		}
	case EdgeOpAppStart, EdgeOpAppConfig:
		if r.App == nil {
			return badEdge("%s without app", r.Operation)
		}
		if err := r.App.Validate(); err != nil {
			return err
		}
	case EdgeOpAppStop:
		if r.App == nil {
			return badEdge("app_stop without app")
		}
		if err := checkEdgeID("app.id", r.App.ID); err != nil {
			return err
		}
	case EdgeOpPing:
	case "":
		return badEdge("operation missing")
	default:
		return badEdge("unknown operation %q", fault.Clip(r.Operation))
	}
	// A field the operation does not take is a mistake worth telling (a
	// priority on a read), for a request built in Go as for a decoded one.
	allowed := edgeOperationFields(r.Operation)
	for _, f := range []struct {
		name string
		set  bool
	}{{"app", r.App != nil}, {"dataPointID", r.DataPointID != ""}, {"keep_out_of_service", r.KeepOutOfService},
		{"priority", r.Priority != 0}, {"value", r.Value != nil}} {
		if f.set && (!slices.Contains(allowed, f.name) || f.name == "value" && r.Operation != EdgeOpWrite) {
			return badEdge("%s does not take %s", r.Operation, f.name)
		}
	}
	return nil
}

// Validate checks an app definition.
func (a EdgeApp) Validate() error {
	if err := checkEdgeID("app.id", a.ID); err != nil {
		return err
	}
	if len(a.Algorithm) > EdgeMaxIDLength {
		return badEdge("app.algorithm longer than %d bytes", EdgeMaxIDLength)
	}
	if a.AliveTimeout < 0 || a.AliveTimeout > EdgeMaxAliveTimeout {
		return badEdge("app.alive_timeout %d outside 0..%d", a.AliveTimeout, EdgeMaxAliveTimeout)
	}
	if len(a.Writes) > EdgeMaxAppWrites {
		return badEdge("app writes %d datapoints, more than %d", len(a.Writes), EdgeMaxAppWrites)
	}
	for i, w := range a.Writes {
		if err := checkEdgeID(fmt.Sprintf("app.writes[%d].dataPointID", i), w.DataPointID); err != nil {
			return err
		}
		if err := checkEdgePriority(fmt.Sprintf("app.writes[%d].priority", i), w.Priority); err != nil {
			return err
		}
		if err := checkEdgeFinite(fmt.Sprintf("app.writes[%d].reset_value", i), w.ResetValue); err != nil {
			return err
		}
	}
	if len(a.Config) > 0 && !json.Valid(a.Config) {
		return badEdge("app.config is not JSON")
	}
	return nil
}

// Validate checks a response as DecodeEdgeResponse does.
func (r EdgeResponse) Validate() error {
	if err := checkEdgeReference(r.Reference); err != nil {
		return err
	}
	switch r.Status {
	case EdgeStatusOK:
	case EdgeStatusError:
		if r.Error == "" {
			return badEdge("status error without error text")
		}
	case "":
		return badEdge("status missing")
	default:
		return badEdge("unknown status %q", fault.Clip(r.Status))
	}
	if err := checkEdgeText("error", r.Error); err != nil {
		return err
	}
	if r.PriorityArray != nil && len(r.PriorityArray) != EdgePrioritySlots {
		return badEdge("priority_array has %d slots, want %d", len(r.PriorityArray), EdgePrioritySlots)
	}
	for i, v := range r.PriorityArray {
		if err := checkEdgeFinite(fmt.Sprintf("priority_array[%d]", i), v); err != nil {
			return err
		}
	}
	if err := checkEdgeFinite("present_value", r.PresentValue); err != nil {
		return err
	}
	return checkEdgeFinite("overwritten_value", r.OverwrittenValue)
}

// Validate checks a heartbeat as DecodeEdgeAlive does.
func (a EdgeAlive) Validate() error {
	if a.Time.IsZero() {
		return badEdge("alive without time")
	}
	if a.Apps == nil {
		return badEdge("alive without apps (an empty list when the device knows none)")
	}
	if len(a.Apps) > EdgeMaxApps {
		return badEdge("alive lists %d apps, more than %d", len(a.Apps), EdgeMaxApps)
	}
	for i, s := range a.Apps {
		if err := checkEdgeID(fmt.Sprintf("apps[%d].id", i), s.ID); err != nil {
			return err
		}
	}
	if len(a.Events) > EdgeMaxEvents {
		return badEdge("alive carries %d events, more than %d", len(a.Events), EdgeMaxEvents)
	}
	for i, e := range a.Events {
		if e.Time.IsZero() {
			return badEdge("events[%d] without time", i)
		}
		switch e.Kind {
		case EdgeEventCrash, EdgeEventReload, EdgeEventReset, EdgeEventRecovered:
		default:
			return badEdge("events[%d]: unknown kind %q", i, fault.Clip(e.Kind))
		}
		if e.Kind != EdgeEventCrash {
			if err := checkEdgeID(fmt.Sprintf("events[%d].app_id", i), e.AppID); err != nil {
				return err
			}
		} else if len(e.AppID) > EdgeMaxIDLength {
			return badEdge("events[%d].app_id longer than %d bytes", i, EdgeMaxIDLength)
		}
		if err := checkEdgeText(fmt.Sprintf("events[%d].message", i), e.Message); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks one observation.
func (o EdgeObservation) Validate() error {
	if err := checkEdgeID("dataPointID", o.DataPointID); err != nil {
		return err
	}
	if o.Time.IsZero() {
		return badEdge("observation without time")
	}
	v := o.Value
	return checkEdgeFinite("value", &v)
}
