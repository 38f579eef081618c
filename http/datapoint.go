package http

import (
	"encoding/json"
	"math"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// PUT /v2/datapoint (api.md 2.9, 4.6): the setpoint bounds of a datapoint,
// which every setpoint write must lie within. Bounds may be set before the
// datapoint has data (it is created then), and cleared with null.

// datapointParams documents the query of PUT /v2/datapoint.
var datapointParams = []param{
	{Name: "project_id", Type: "integer", Required: true, Doc: "the project of the datapoint"},
	{Name: "dataPointID", Type: "string", Required: true, Doc: "the datapoint; setting bounds creates it when it has no data yet (clearing them needs it to exist, 404 otherwise)"},
}

// setpointBounds is the body of PUT /v2/datapoint.
type setpointBounds struct {
	Min *float64 `json:"setpoint_min_value" required:"true" nullable:"true" doc:"lowest value a setpoint may write; a finite number, at most setpoint_max_value; null (with setpoint_max_value null) clears the bounds"`
	Max *float64 `json:"setpoint_max_value" required:"true" nullable:"true" doc:"highest value a setpoint may write; a finite number, at least setpoint_min_value; null (with setpoint_min_value null) clears the bounds"`
}

// decodeBounds reads the body: both fields must be given, both numbers
// (set) or both null (clear). decode takes a null for a missing field, so
// the fields' presence is read from the body itself. Each failure is a
// 400 naming the field.
func decodeBounds(c *fiber.Ctx) (setpointBounds, error) {
	var b setpointBounds
	var unchecked struct {
		Min *float64 `json:"setpoint_min_value"`
		Max *float64 `json:"setpoint_max_value"`
	}
	if err := decode(c, &unchecked); err != nil {
		return b, err
	}
	var present map[string]json.RawMessage
	_ = json.Unmarshal(c.Body(), &present) // decode took it: an object, or empty
	for _, name := range []string{"setpoint_min_value", "setpoint_max_value"} {
		if _, ok := present[name]; !ok {
			return b, fault.Invalidf("field %s is required: a number, or null with the other null to clear the bounds", name)
		}
	}
	b = setpointBounds(unchecked)
	if (b.Min == nil) != (b.Max == nil) {
		return b, fault.Invalidf("fields setpoint_min_value and setpoint_max_value are set together or cleared together (both null)")
	}
	if b.Min == nil {
		return b, nil
	}
	return b, b.validate()
}

// validate checks finite values in order.
func (b setpointBounds) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"setpoint_min_value", *b.Min}, {"setpoint_max_value", *b.Max}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fault.Invalidf("field %s must be a finite number", f.name)
		}
	}
	if *b.Min > *b.Max {
		return fault.Invalidf("field setpoint_min_value (%g) must not be greater than setpoint_max_value (%g)", *b.Min, *b.Max)
	}
	return nil
}

// updateDatapoint sets or clears both setpoint bounds. Input is judged
// first (400), then write access by TagAuth (403, judged on the name alone
// when the datapoint does not exist, so a caller without access cannot
// probe which ones exist).
func (s *Server) updateDatapoint(c *fiber.Ctx, cl *call) (any, error) {
	id, err := vdpParam(c)
	if err != nil {
		return nil, err
	}
	req, err := decodeBounds(c)
	if err != nil {
		return nil, err
	}
	if err := s.requireDatapointAccess(c, cl, []string{id}, true); err != nil {
		return nil, err
	}
	var d store.DatapointSetpoints
	if req.Min == nil {
		d, err = s.store.ClearDatapointSetpoints(c.UserContext(), cl.ProjectID, id)
	} else {
		d, err = s.store.SetDatapointSetpoints(c.UserContext(), cl.ProjectID, id, *req.Min, *req.Max)
	}
	if err != nil {
		return nil, err
	}
	return ok("update", d), nil
}

// getDatapoint answers a datapoint with its setpoint bounds to a caller
// who may read it by TagAuth (the browser UI shows the bounds before a
// write).
func (s *Server) getDatapoint(c *fiber.Ctx, cl *call) (any, error) {
	id, err := vdpParam(c)
	if err != nil {
		return nil, err
	}
	if err := s.requireDatapointAccess(c, cl, []string{id}, false); err != nil {
		return nil, err
	}
	return s.store.DatapointSetpointsOf(c.UserContext(), cl.ProjectID, id) // fault.NotFound: 404
}
