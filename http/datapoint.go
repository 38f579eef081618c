package http

import (
	"math"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/fault"
)

// PUT /v2/datapoint (api.md 2.9, 4.6): the setpoint bounds of a datapoint,
// which every setpoint write must lie within.

// datapointParams documents the query of PUT /v2/datapoint.
var datapointParams = []param{
	{Name: "project_id", Type: "integer", Required: true, Doc: "the project of the datapoint"},
	{Name: "dataPointID", Type: "string", Required: true, Doc: "the datapoint; it must exist (its first observation creates it), 404 otherwise"},
}

// setpointBounds is the body of PUT /v2/datapoint.
type setpointBounds struct {
	Min *float64 `json:"setpoint_min_value" required:"true" doc:"lowest value a setpoint may write; a finite number, at most setpoint_max_value"`
	Max *float64 `json:"setpoint_max_value" required:"true" doc:"highest value a setpoint may write; a finite number, at least setpoint_min_value"`
}

// validate checks what decode cannot: finite values in order. Each
// failure is a 400 naming the field.
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

// updateDatapoint sets both setpoint bounds. Input is judged first (400),
// then write access by TagAuth (403, judged on the name alone when the
// datapoint does not exist, so a caller without access cannot probe which
// ones exist), then existence (404).
func (s *Server) updateDatapoint(c *fiber.Ctx, cl *call) (any, error) {
	id, err := vdpParam(c)
	if err != nil {
		return nil, err
	}
	var req setpointBounds
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	if err := req.validate(); err != nil {
		return nil, err
	}
	if err := s.requireDatapointAccess(c, cl, []string{id}, true); err != nil {
		return nil, err
	}
	d, err := s.store.SetDatapointSetpoints(c.UserContext(), cl.ProjectID, id, *req.Min, *req.Max)
	if err != nil {
		return nil, err
	}
	return ok("update", d), nil
}
