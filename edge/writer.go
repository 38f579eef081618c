// Package edge is the platform's side of a building's edge device: one
// connection actor per project speaks the protocol of docs/edge-protocol.md
// over the MQTT broker, and setpoint writes (POST /v2/datapoint/setpoint and
// controls apps) travel through it.
package edge

import (
	"context"
	"time"
)

// Write is one setpoint write as POST /v2/datapoint/setpoint takes it.
// Controls apps build the same value, so both pass the same safeguards
// (api.md 4.6: writing enabled, bounds, priority; the caller's TagAuths are
// checked by the HTTP layer before, an app acts with its project's rights).
type Write struct {
	ProjectID        int64
	DataPointID      string
	Value            *float64 // nil clears the slot at Priority
	Priority         int      // 1..16, no more urgent than the project's setpoint_max_priority
	KeepOutOfService bool
	Acked            bool   // keep state and a reference, follow the write to written|failed
	DryRun           bool   // ask the device, write nothing
	Source           string // "user:{id}" or "app:{id}", recorded with an acked operation
	// Authorize, when set, is safeguard 2 for a user's write (the
	// caller's TagAuths), run in api.md's order: after the project check,
	// before the bounds. nil: a controls app, acting with the project's
	// rights.
	Authorize func(ctx context.Context) error
}

// Operation is what a Write answered: for acked writes and dry runs the
// reference and the stage reached so far.
type Operation struct {
	Reference   string // empty for an unacked write: no state is kept (api.md 4.6 rule 5)
	ProjectID   int64
	DataPointID string
	Value       *float64
	Priority    int
	Acked       bool
	DryRun      bool
	State       string // initialized|requested|written|reported|failed; "requested" for an unacked write sent
	Reason      string // why the operation failed
	CreatedAt   time.Time
	// PriorityArray is the device's 17 slots before the write (index 16:
	// relinquish default), known once the device answered.
	PriorityArray    []*float64
	OverwrittenValue *float64
}

// Operation states (api.md 3.3, decisions.md 7).
const (
	StateInitialized = "initialized"
	StateRequested   = "requested"
	StateWritten     = "written"
	// StateReported ends a dry run the device answered: it reported the
	// datapoint's state and nothing was written (api.md 4.6 rule 6), so a
	// dry run never says written.
	StateReported = "reported"
	StateFailed   = "failed"
)

// Writer writes setpoints through a project's edge device, with the
// safeguards of api.md 4.6. Errors are fault kinds (package fault) with the
// texts of api.md 7, so the HTTP layer and controls apps report the same.
type Writer interface {
	Write(ctx context.Context, w Write) (Operation, error)
}
