package http

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/edge"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// Setpoint writes (api.md 2.12, 3.3, 4.6) through the project's edge
// device (package edge, which checks the safeguards in api.md's order).

// Setpoints is the edge side as the HTTP layer uses it.
type Setpoints interface {
	edge.Writer
	// StatusAnywhere is the state of a project's edge connection, asked
	// of the node that runs it (in a cluster, maybe another one).
	StatusAnywhere(ctx context.Context, projectID int64) (edge.Status, error)
}

// setpointParams documents the query of POST /v2/datapoint/setpoint.
var setpointParams = []param{
	{Name: "project_id", Type: "integer", Required: true, Doc: "the project of the datapoint"},
	{Name: "dataPointID", Type: "string", Required: true, Doc: "the datapoint to write"},
	{Name: "value", Type: "string", Required: true, Doc: "a finite number (integer or float), or the string null to clear the slot at priority; NaN and infinities answer 400"},
	{Name: "priority", Type: "integer", Doc: "1 (most urgent) to 16, default 13; no more urgent than the project's setpoint_max_priority (default 8, set by the operator): a refused priority answers 400"},
	{Name: "acked", Type: "boolean", Doc: "default false. true: the answer carries a reference at once (state initialized); GET /v2/datapoint/setpoint/{reference} follows it to requested and written (reported for a dry run: nothing was written), or failed (device error, or no answer within 30 s)"},
	{Name: "dryrun", Type: "boolean", Doc: "default false. true: nothing is written; the device is asked for the datapoint's priority array, answered as priority_array and old_value (waits for the device at most 30 s; 503 when it is offline or does not answer)"},
	{Name: "keep_out_of_service", Type: "boolean", Doc: "default false. true: the device keeps the local automation from overwriting the value"},
}

// setpointResource is the resource of POST /v2/datapoint/setpoint.
type setpointResource struct {
	Acked            bool       `json:"acked"`
	DataPointID      string     `json:"dataPointID"`
	DryRun           bool       `json:"dryrun"`
	Priority         int        `json:"priority"`
	Value            any        `json:"value" doc:"the value written: a number, or the string null for a clear"`
	KeepOutOfService bool       `json:"keep_out_of_service"`
	ProjectID        int64      `json:"project_id,omitempty" doc:"acked operations only"`
	Reference        string     `json:"reference,omitempty" doc:"acked operations only: the uuid GET /v2/datapoint/setpoint/{reference} takes"`
	OldValue         any        `json:"old_value,omitempty" doc:"dry runs only: the value at priority that a write would overwrite (number, or the string null)"`
	PriorityArray    []*float64 `json:"priority_array,omitempty" doc:"dry runs only: the device's 17 slots (priorities 1 to 16, then the relinquish default; null: empty)"`
}

// decimalPattern is a number as api.md's value takes it: an integer or
// a decimal float, with an optional exponent; ParseFloat alone would also
// take hexadecimal floats, underscores, NaN and Inf.
var decimalPattern = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// parseSetpointValue reads value: a finite number, or "null" for a clear.
func parseSetpointValue(raw string) (*float64, error) {
	if raw == "" {
		return nil, fault.Invalidf("query parameter value is required (a number, or null to clear)")
	}
	if raw == "null" {
		return nil, nil
	}
	raw = strings.TrimSpace(raw)
	if !decimalPattern.MatchString(raw) {
		return nil, fault.Invalidf("value must be a finite number or the string null, got %q", fault.Clip(raw))
	}
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, fault.Invalidf("value must be a finite number or the string null, got %q", fault.Clip(raw))
	}
	return &v, nil
}

func (s *Server) writeSetpoint(c *fiber.Ctx, cl *call) (any, error) {
	if s.setpoints == nil {
		return nil, fault.Wrap(fault.Unavailable, nil, "setpoint writing does not run on this node")
	}
	id, err := vdpParam(c)
	if err != nil {
		return nil, err
	}
	value, err := parseSetpointValue(c.Query("value"))
	if err != nil {
		return nil, err
	}
	priority := 13
	if raw := c.Query("priority"); raw != "" {
		if priority, err = strconv.Atoi(raw); err != nil || priority < 1 || priority > 16 {
			return nil, fault.Invalidf("priority must be an integer from 1 (most urgent) to 16, got %q", fault.Clip(raw))
		}
	}
	w := edge.Write{ProjectID: cl.ProjectID, DataPointID: id, Value: value, Priority: priority,
		Source:    "user:" + strconv.FormatInt(cl.Perms.UserID, 10),
		Authorize: func(context.Context) error { return s.requireDatapointAccess(c, cl, []string{id}, true) }}
	for _, b := range []struct {
		name string
		to   *bool
	}{{"acked", &w.Acked}, {"dryrun", &w.DryRun}, {"keep_out_of_service", &w.KeepOutOfService}} {
		if *b.to, err = queryBool(c, b.name); err != nil {
			return nil, err
		}
	}
	op, err := s.setpoints.Write(c.UserContext(), w)
	if err != nil {
		var r *edge.Refusal
		if errors.As(err, &r) {
			c.Locals(localOperation, r.Operation)
		}
		return nil, err
	}
	res := setpointResource{Acked: w.Acked, DataPointID: id, DryRun: w.DryRun, Priority: priority, Value: valueOrNull(value),
		KeepOutOfService: w.KeepOutOfService}
	if w.Acked {
		res.ProjectID, res.Reference = cl.ProjectID, op.Reference
	}
	if w.DryRun {
		res.OldValue, res.PriorityArray = valueOrNull(op.OverwrittenValue), op.PriorityArray
	}
	return ok("create", res), nil
}

// valueOrNull is a value as api.md 2.12 shows it: a number or the string
// null.
func valueOrNull(v *float64) any {
	if v == nil {
		return "null"
	}
	return *v
}

// setpointOperation is GET /v2/datapoint/setpoint/{reference}: api.md
// 2.12 with aedifion's SetpointAck names (log as a JSON-formatted string,
// as both show it; state_before).
type setpointOperation struct {
	Reference        string         `json:"reference"`
	DataPointID      string         `json:"dataPointID"`
	ProjectID        int64          `json:"project_id"`
	Value            any            `json:"value" doc:"number, or the string null for a clear"`
	Priority         int            `json:"priority"`
	Acked            bool           `json:"acked"`
	DryRun           bool           `json:"dryrun"`
	KeepOutOfService bool           `json:"keep_out_of_service"`
	Status           string         `json:"status" doc:"initialized, requested, written, reported or failed; reported ends a dry run the device answered (nothing was written), so a dry run never says written"`
	Reason           string         `json:"reason,omitempty" doc:"failed only: why (the device's error, or no answer within 30 s)"`
	OldValue         string         `json:"old_value" doc:"the value the write overwrote at its priority, once written (a number as text, or null)"`
	StateBefore      map[string]any `json:"state_before" doc:"once written (or reported, for a dry run): priorityArray (17 slots before the write) and overwritten_value"`
	Log              string         `json:"log" doc:"the stages as a JSON-formatted list: msg, status, time (ISO 8601, microseconds, UTC); the first also acked and dryrun; written (a dry run: reported, its msg saying nothing was written) also priorityArray (a string of 17 slots) and overwritten_value"`
	CreatedAt        time.Time      `json:"created_at"`
}

// referencePattern is a uuid, as references are.
var referencePattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// getSetpoint answers an operation to a caller of its project's company
// who may call this endpoint in that project and read the datapoint; an
// operation of another company is not found.
func (s *Server) getSetpoint(c *fiber.Ctx, cl *call) (any, error) {
	ref := c.Params("reference")
	notFound := fault.NotFoundf("setpoint operation %q not found", fault.Clip(ref))
	if !referencePattern.MatchString(ref) {
		return nil, notFound
	}
	op, entries, err := s.store.SetpointOperation(c.UserContext(), strings.ToLower(ref))
	if err != nil {
		return nil, err
	}
	company, err := s.authz.projectCompany(c.UserContext(), op.ProjectID)
	if err != nil && !fault.Is(err, fault.NotFound) {
		return nil, err
	}
	if err != nil || company != cl.Perms.CompanyID {
		return nil, notFound
	}
	if err := cl.Perms.CheckIn(s.routeID("GET", "/v2/datapoint/setpoint/{reference}"), op.ProjectID); err != nil {
		return nil, err
	}
	scoped := *cl
	scoped.ProjectID = op.ProjectID
	if err := s.requireDatapointAccess(c, &scoped, []string{op.DataPointID}, false); err != nil {
		return nil, err
	}
	return renderSetpointOperation(op, entries)
}

func renderSetpointOperation(op store.SetpointOperation, entries []store.SetpointLogEntry) (setpointOperation, error) {
	out := setpointOperation{Reference: op.Reference, DataPointID: op.DataPointID, ProjectID: op.ProjectID, Value: valueOrNull(op.Value),
		Priority: op.Priority, Acked: op.Acked, DryRun: op.DryRun, KeepOutOfService: op.KeepOutOfService, Status: op.State,
		Reason: op.Reason, OldValue: "null", StateBefore: map[string]any{}, CreatedAt: op.CreatedAt.UTC()}
	if op.OldValue != nil {
		out.OldValue = strconv.FormatFloat(*op.OldValue, 'g', -1, 64)
	}
	log := make([]map[string]any, 0, len(entries))
	for _, e := range entries {
		item := map[string]any{"msg": e.Msg, "status": e.Stage, "time": e.Time.UTC().Format("2006-01-02T15:04:05.000000Z")}
		for k, v := range e.Details {
			item[k] = v
		}
		if pa, ok := e.Details["priorityArray"]; ok {
			raw, err := json.Marshal(pa)
			if err != nil {
				return setpointOperation{}, err
			}
			item["priorityArray"] = string(raw) // a string, as in api.md's sample
			out.StateBefore["priorityArray"] = pa
			out.StateBefore["overwritten_value"] = e.Details["overwritten_value"]
		}
		log = append(log, item)
	}
	raw, err := json.Marshal(log)
	if err != nil {
		return setpointOperation{}, err
	}
	out.Log = string(raw)
	return out, nil
}

// getProjectEdge is GET /v2/project/{project_id}/edge: the state of the
// project's edge connection.
func (s *Server) getProjectEdge(c *fiber.Ctx, cl *call) (any, error) {
	if s.setpoints == nil {
		return edge.Status{}, nil
	}
	return s.setpoints.StatusAnywhere(c.UserContext(), cl.ProjectID)
}

// routeID is the catalog id of a declared route.
func (s *Server) routeID(method, path string) int32 {
	for _, r := range s.routes {
		if r.Method == method && r.Path == path {
			return r.ID
		}
	}
	return 0
}
